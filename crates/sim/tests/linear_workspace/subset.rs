//! The comparison that holds the simulator's Linear schema to Linear's published one: every
//! type it declares exists there with the same kind; every field with the same type (named
//! type, list wrapping, nullability) and every argument with the same type and default; no
//! required argument of Linear's is left out; interfaces, enum values and input fields are
//! Linear's. A client tested against the simulator then cannot lean on a field, a nullability
//! or an argument that Linear does not have.

use apollo_compiler::Schema;
use apollo_compiler::schema::{ExtendedType, FieldDefinition};

fn parse(sdl: &str, name: &str) -> Schema {
    match Schema::parse_and_validate(sdl, name) {
        Ok(s) => s.into_inner(),
        Err(e) => e.partial,
    }
}

fn kind(t: &ExtendedType) -> &'static str {
    match t {
        ExtendedType::Scalar(_) => "scalar",
        ExtendedType::Object(_) => "type",
        ExtendedType::Interface(_) => "interface",
        ExtendedType::Union(_) => "union",
        ExtendedType::Enum(_) => "enum",
        ExtendedType::InputObject(_) => "input",
    }
}

fn fields_differ(
    name: &str,
    fname: &str,
    mine: &FieldDefinition,
    theirs: &FieldDefinition,
) -> Vec<String> {
    let mut out = Vec::new();
    if mine.ty != theirs.ty {
        out.push(format!(
            "{name}.{fname}: {} here, {} in Linear's",
            mine.ty, theirs.ty
        ));
    }
    for arg in &mine.arguments {
        match theirs.arguments.iter().find(|a| a.name == arg.name) {
            None => out.push(format!("{name}.{fname}({}:): not in Linear's", arg.name)),
            Some(a) if a.ty != arg.ty || a.default_value != arg.default_value => out.push(format!(
                "{name}.{fname}({}:): {} here, {} in Linear's",
                arg.name, arg.ty, a.ty
            )),
            Some(_) => {}
        }
    }
    for a in &theirs.arguments {
        let required = a.ty.is_non_null() && a.default_value.is_none();
        if required && !mine.arguments.iter().any(|x| x.name == a.name) {
            out.push(format!(
                "{name}.{fname}({}:): required by Linear, not declared",
                a.name
            ));
        }
    }
    out
}

/// Every difference between `sim_sdl` and Linear's `oracle_sdl`, one line each.
pub fn differences(sim_sdl: &str, oracle_sdl: &str) -> Vec<String> {
    let sim = parse(sim_sdl, "sim.graphql");
    let linear = parse(oracle_sdl, "linear.graphql");
    let mut out = Vec::new();
    for (name, ty) in &sim.types {
        if ty.is_built_in() {
            continue;
        }
        let Some(theirs) = linear.types.get(name) else {
            out.push(format!("{} {name}: not in Linear's schema", kind(ty)));
            continue;
        };
        if kind(ty) != kind(theirs) {
            out.push(format!(
                "{name}: a {} here, a {} in Linear's",
                kind(ty),
                kind(theirs)
            ));
            continue;
        }
        match (ty, theirs) {
            (ExtendedType::Object(a), ExtendedType::Object(b)) => {
                for (f, def) in &a.fields {
                    match b.fields.get(f) {
                        None => out.push(format!("{name}.{f}: not in Linear's")),
                        Some(t) => out.extend(fields_differ(name, f, def, t)),
                    }
                }
                for i in &a.implements_interfaces {
                    if !b.implements_interfaces.contains(i) {
                        out.push(format!("{name} implements {i}; Linear's does not"));
                    }
                }
            }
            (ExtendedType::Interface(a), ExtendedType::Interface(b)) => {
                for (f, def) in &a.fields {
                    match b.fields.get(f) {
                        None => out.push(format!("{name}.{f}: not in Linear's")),
                        Some(t) => out.extend(fields_differ(name, f, def, t)),
                    }
                }
            }
            (ExtendedType::Enum(a), ExtendedType::Enum(b)) => {
                for v in a.values.keys() {
                    if !b.values.contains_key(v) {
                        out.push(format!("enum {name}: no value {v} in Linear's"));
                    }
                }
            }
            (ExtendedType::InputObject(a), ExtendedType::InputObject(b)) => {
                for (f, def) in &a.fields {
                    match b.fields.get(f) {
                        None => out.push(format!("input {name}.{f}: not in Linear's")),
                        Some(d) if d.ty != def.ty => out.push(format!(
                            "input {name}.{f}: {} here, {} in Linear's",
                            def.ty, d.ty
                        )),
                        Some(_) => {}
                    }
                }
                for (f, d) in &b.fields {
                    let required = d.ty.is_non_null() && d.default_value.is_none();
                    if required && !a.fields.contains_key(f) {
                        out.push(format!(
                            "input {name}.{f}: required by Linear, not declared"
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    let root = |s: &Schema| {
        s.schema_definition
            .query
            .as_ref()
            .map(|n| n.name.to_string())
    };
    if root(&sim) != root(&linear) {
        out.push(format!(
            "query root {:?} here, {:?} in Linear's",
            root(&sim),
            root(&linear)
        ));
    }
    out
}
