//! A narrowing JQL (parentheses, `OR`, `NOT`, the fields of the documented subset) selects
//! what the issues' fields say, and the rest answers 400 in Jira's words; the sprint and
//! story-point fields are listed by `GET /field` and served at the site's own ids.

use serde_json::{Value, json};

use super::{body, get, jira_sim, keys_of, search_all, small};

#[tokio::test(start_paused = true)]
async fn a_narrowing_jql_with_parentheses_or_and_not_selects_what_its_fields_say() {
    let sim = jira_sim(small());
    let fields = ["status", "labels", "issuetype", "assignee", "project"];
    let all = search_all(&sim, "project in (PA, PB, PC)", &fields)
        .await
        .expect("a search");
    assert_eq!(all.len(), 51);
    let f = |i: &Value, name: &str| i["fields"][name].clone();
    let project = |i: &Value| {
        f(i, "project")["key"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let status = |i: &Value| {
        f(i, "status")["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let labels = |i: &Value| -> Vec<String> {
        f(i, "labels")
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let kind = |i: &Value| {
        f(i, "issuetype")["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let assignee = |i: &Value| f(i, "assignee")["accountId"].as_str().map(str::to_owned);
    let someone = all.iter().find_map(assignee).expect("an assigned issue");
    let me = body(&get(&sim, "/rest/api/3/myself").await);
    let alice = me["accountId"].as_str().expect("an account").to_owned();
    type Pick<'a> = Box<dyn Fn(&Value) -> bool + 'a>;
    let cases: Vec<(String, Pick)> = vec![
        (
            "project = PA AND (status = Done OR labels = backend) ORDER BY key".into(),
            Box::new(|i| {
                project(i) == "PA"
                    && (status(i) == "Done" || labels(i).contains(&"backend".to_owned()))
            }),
        ),
        (
            "project in (PA, PB) AND NOT status in (\"To Do\", \"In Progress\")".into(),
            Box::new(|i| project(i) != "PC" && status(i) == "Done"),
        ),
        (
            "project = PC AND labels != ops".into(),
            Box::new(|i| {
                project(i) == "PC" && !labels(i).is_empty() && !labels(i).contains(&"ops".into())
            }),
        ),
        (
            "project = PB AND assignee is EMPTY".into(),
            Box::new(|i| project(i) == "PB" && assignee(i).is_none()),
        ),
        // AND binds tighter than OR; `type` is `issuetype`, by name or id.
        (
            "project = PA AND issuetype = Bug AND status != Done OR project = PB AND type = 10003"
                .into(),
            Box::new(|i| {
                (project(i) == "PA" && kind(i) == "Bug" && status(i) != "Done")
                    || (project(i) == "PB" && kind(i) == "Story")
            }),
        ),
        (
            format!("project in (PA, PB, PC) AND assignee = \"{someone}\""),
            Box::new(|i| assignee(i).as_deref() == Some(someone.as_str())),
        ),
        (
            "project in (PA, PB, PC) AND assignee = currentUser()".into(),
            Box::new(|i| assignee(i) == Some(alice.clone())),
        ),
    ];
    for (jql, pick) in &cases {
        let want = keys_of(all.iter().filter(|i| pick(i)));
        assert!(
            !want.is_empty() && want.len() < all.len(),
            "{jql}: {want:?}"
        );
        let got = search_all(&sim, jql, &["status"]).await.expect("a search");
        assert_eq!(keys_of(&got), want, "{jql}");
    }
    for (jql, words) in [
        (
            "project = PA AND status = Closed",
            "does not exist for the field 'status'",
        ),
        ("project = PA AND (status = Done", "Expecting ')'"),
        (
            "project = PA AND resolution = Fixed",
            "Field 'resolution' does not exist",
        ),
        (
            "project = PA AND status = currentUser()",
            "Unable to find JQL function",
        ),
        (
            "project = PA AND labels is backend",
            "only be used with the value 'EMPTY'",
        ),
    ] {
        let m = search_all(&sim, jql, &["status"]).await.expect_err(jql);
        assert!(m.contains(words), "{jql}: {m}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_sprint_and_story_point_fields_are_listed_and_served_at_the_sites_own_ids() {
    let sim = jira_sim(small().with_custom_fields("customfield_10111", "customfield_10222"));
    let r = get(&sim, "/rest/api/3/field").await;
    assert_eq!(r.status(), 200);
    let list = body(&r);
    let with = |key: &str, want: &str| {
        list.as_array()
            .expect("a list")
            .iter()
            .filter(|f| f["schema"]["custom"] == json!(want) || f["name"] == json!(want))
            .map(|f| f[key].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        with("id", "com.pyxis.greenhopper.jira:gh-sprint"),
        ["customfield_10111"]
    );
    assert_eq!(with("id", "Story Points"), ["customfield_10222"]);
    let fields = [
        "customfield_10111",
        "customfield_10222",
        "customfield_10020",
    ];
    let issues = search_all(&sim, "project in (PA, PB, PC)", &fields)
        .await
        .expect("a search");
    let counts = sim.jira_site_counts().expect("seeded");
    let having = |name: &str, check: fn(&Value) -> bool| {
        issues.iter().filter(|i| check(&i["fields"][name])).count()
    };
    let in_sprint = having("customfield_10111", |v| v[0]["id"].is_u64());
    assert_eq!(in_sprint, counts.sprint_memberships);
    assert!(in_sprint > 0 && in_sprint < issues.len());
    let estimated = having("customfield_10222", Value::is_f64);
    assert_eq!(estimated, counts.estimated_issues);
    assert!(estimated > 0 && estimated < issues.len());
    assert_eq!(having("customfield_10020", |v| !v.is_null()), 0);
}
