//! The simulator's GraphQL schema is a subset of GitHub's published one, exactly: every type
//! it serves exists in GitHub's schema with the same kind; every field with the same type
//! (named type, list wrapping and nullability); every argument it declares exists there with
//! the same type; every interface a type implements GitHub's type implements too; union
//! members, enum values and input fields are GitHub's; scalars have GitHub's names. A client
//! tested against the simulator then cannot lean on a field, a nullability or a shape that
//! GitHub does not have.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use apollo_compiler::Schema;
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;

fn sim_schema() -> Valid<Schema> {
    let sdl = headroom_sim::graphql::schema().sdl();
    match Schema::parse_and_validate(&sdl, "sim.graphql") {
        Ok(s) => s,
        Err(e) => panic!("the simulator's SDL does not validate: {}\n{sdl}", e.errors),
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

/// Every difference between the simulator's schema and GitHub's, one line each.
fn differences(sim: &Schema, github: &Schema) -> Vec<String> {
    let mut out = Vec::new();
    for (name, ty) in &sim.types {
        if ty.is_built_in() {
            continue;
        }
        let Some(theirs) = github.types.get(name) else {
            out.push(format!("{} {name}: not in GitHub's schema", kind(ty)));
            continue;
        };
        if kind(ty) != kind(theirs) {
            out.push(format!(
                "{name}: a {} here, a {} in GitHub's schema",
                kind(ty),
                kind(theirs)
            ));
            continue;
        }
        let (fields, their_fields, interfaces, their_interfaces) = match (ty, theirs) {
            (ExtendedType::Object(a), ExtendedType::Object(b)) => (
                Some(&a.fields),
                Some(&b.fields),
                Some(&a.implements_interfaces),
                Some(&b.implements_interfaces),
            ),
            (ExtendedType::Interface(a), ExtendedType::Interface(b)) => (
                Some(&a.fields),
                Some(&b.fields),
                Some(&a.implements_interfaces),
                Some(&b.implements_interfaces),
            ),
            _ => (None, None, None, None),
        };
        if let (Some(fields), Some(their_fields)) = (fields, their_fields) {
            for (fname, field) in fields {
                let Some(their) = their_fields.get(fname) else {
                    out.push(format!("{name}.{fname}: no such field on GitHub's {name}"));
                    continue;
                };
                if field.ty != their.ty {
                    out.push(format!(
                        "{name}.{fname}: {} here, {} in GitHub's schema",
                        field.ty, their.ty
                    ));
                }
                for arg in &field.arguments {
                    match their.arguments.iter().find(|a| a.name == arg.name) {
                        None => out.push(format!(
                            "{name}.{fname}({}:): no such argument in GitHub's schema",
                            arg.name
                        )),
                        Some(a) if a.ty != arg.ty => out.push(format!(
                            "{name}.{fname}({}:): {} here, {} in GitHub's schema",
                            arg.name, arg.ty, a.ty
                        )),
                        Some(_) => {}
                    }
                }
                // A required argument of GitHub's that the simulator does not declare would
                // let a client omit it here and be refused there.
                for a in &their.arguments {
                    if a.ty.is_non_null()
                        && a.default_value.is_none()
                        && !field.arguments.iter().any(|x| x.name == a.name)
                    {
                        out.push(format!(
                            "{name}.{fname}({}:): required by GitHub ({}), not declared here",
                            a.name, a.ty
                        ));
                    }
                }
            }
        }
        if let (Some(mine), Some(theirs)) = (interfaces, their_interfaces) {
            for i in mine {
                if !theirs.contains(i) {
                    out.push(format!("{name} implements {i}; GitHub's {name} does not"));
                }
            }
        }
        match (ty, theirs) {
            (ExtendedType::Union(a), ExtendedType::Union(b)) => {
                for m in &a.members {
                    if !b.members.contains(m) {
                        out.push(format!("union {name}: {m} is not a member in GitHub's"));
                    }
                }
            }
            (ExtendedType::Enum(a), ExtendedType::Enum(b)) => {
                for v in a.values.keys() {
                    if !b.values.contains_key(v) {
                        out.push(format!("enum {name}: no value {v} in GitHub's"));
                    }
                }
            }
            (ExtendedType::InputObject(a), ExtendedType::InputObject(b)) => {
                for (f, def) in &a.fields {
                    match b.fields.get(f) {
                        None => out.push(format!("input {name}.{f}: not in GitHub's")),
                        Some(d) if d.ty != def.ty => out.push(format!(
                            "input {name}.{f}: {} here, {} in GitHub's schema",
                            def.ty, d.ty
                        )),
                        Some(_) => {}
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
    if root(sim) != root(github) {
        out.push(format!(
            "the query root is {:?} here, {:?} in GitHub's schema",
            root(sim),
            root(github)
        ));
    }
    out
}

#[test]
fn the_simulators_schema_is_a_subset_of_githubs() {
    let sim = sim_schema();
    let diff = differences(&sim, headroom_sim::graphql::github_schema());
    assert!(
        diff.is_empty(),
        "{} differences from GitHub's schema:\n{}",
        diff.len(),
        diff.join("\n")
    );
}

/// The comparison finds what it is meant to find.
#[test]
fn the_comparison_sees_a_wrong_type_a_missing_field_and_a_foreign_member() {
    let wrong = Schema::parse_and_validate(
        "type Query { repository(owner: String!, name: String!, nope: Int): Repository }
         type Repository { id: String! name: String! owner: User databaseId: Int! made_up: Int }
         type User { login: String! }
         union ProjectV2ItemContent = Issue | User
         type Issue { id: ID! }
         enum IssueState { OPEN SHUT }",
        "wrong.graphql",
    )
    .expect("valid SDL");
    let diff = differences(&wrong, headroom_sim::graphql::github_schema()).join("\n");
    for expected in [
        "Repository.id: String! here, ID! in GitHub's schema",
        "Repository.owner: User here, RepositoryOwner! in GitHub's schema",
        "Repository.databaseId: Int! here, Int in GitHub's schema",
        "Repository.made_up: no such field",
        "Query.repository(nope:): no such argument",
        "union ProjectV2ItemContent: User is not a member",
        "enum IssueState: no value SHUT",
    ] {
        assert!(diff.contains(expected), "{expected} not found in:\n{diff}");
    }
}
