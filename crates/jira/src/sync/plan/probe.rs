//! Sending the plan's probe, every request in `jira_metadata` on its endpoint's burst bucket:
//! the projects listed as stage `projects` lists them (`total` and keys), the issues counted
//! (`POST /search/approximate-count`: of the selection once, and of each of up to
//! [`PROJECT_SAMPLE`] projects spread over it), one search page of [`ISSUE_SAMPLE`] issues
//! with their `comment` field (its `total`), a one-item page of the changelog (and worklogs)
//! of [`CHILD_SAMPLE`] of them, the boards listed (the agile API gives no total) and the
//! sprints of [`BOARD_SAMPLE`] scrum boards. Shared by `sync plan jira` and `sync jira
//! --estimate`.

use headroom_core::route;
use headroom_http::{ApiError, ApiRequest, ApiResponse, Client, Credential};
use serde_json::{Value, json};

use super::super::Selection;
use super::super::send::{get, offset_page, post_read};
use super::{
    AGILE_PAGE, BOARD_SAMPLE, CHILD_SAMPLE, ISSUE_SAMPLE, IssueSample, JiraProbe, PROJECT_PAGE,
    PROJECT_SAMPLE,
};
use crate::jql::{self, JqlError};

/// Sprint pages of one sampled board the probe reads at most (2,500 sprints).
const SPRINT_PAGES: u64 = 50;

/// Why the probe could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// A request failed (its own words: exit hints read them).
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The selection's JQL cannot be written.
    #[error(transparent)]
    Jql(#[from] JqlError),
    /// Jira answered something the probe cannot read.
    #[error("unexpected answer to {0}")]
    Unreadable(&'static str),
}

/// Indices of `n` items spread evenly over `len`.
fn spread(len: usize, n: usize) -> Vec<usize> {
    if len <= n {
        return (0..len).collect();
    }
    (0..n).map(|i| i * len / n).collect()
}

/// The probe's requests, counted.
struct Sender<'a> {
    client: &'a Client,
    credential: Option<&'a Credential>,
    sent: u64,
}

impl Sender<'_> {
    async fn send(&mut self, request: ApiRequest) -> Result<ApiResponse, ApiError> {
        self.sent += 1;
        self.client.send(request.credential(self.credential)).await
    }

    async fn json(&mut self, request: ApiRequest) -> Result<Value, ProbeError> {
        Ok(self.send(request).await?.json()?)
    }

    async fn get(&mut self, path: &str, endpoint: &str) -> Result<Value, ProbeError> {
        self.json(get(path, route::JIRA_SYNC_PLAN, endpoint)).await
    }

    /// The number of issues `jql` matches.
    async fn count(&mut self, jql: &str) -> Result<u64, ProbeError> {
        let request = post_read(
            "/rest/api/3/search/approximate-count",
            &json!({ "jql": jql }),
            route::JIRA_SYNC_PLAN,
            "POST /rest/api/3/search/approximate-count",
        );
        let body = self.json(request).await?;
        body.get("count")
            .and_then(Value::as_u64)
            .ok_or(ProbeError::Unreadable("search/approximate-count"))
    }
}

/// The search condition of `keys` under `selection`, without its order (a count has none).
fn condition(keys: &[&str], selection: &Selection) -> Result<String, JqlError> {
    let jql = jql::issues_matching(keys, selection.narrower(), None)?;
    Ok(match jql.rsplit_once(" ORDER BY ") {
        Some((condition, _)) => condition.to_owned(),
        None => jql,
    })
}

/// Probes the site for `selection` with `credential`.
pub async fn probe(
    client: &Client,
    credential: Option<&Credential>,
    selection: &Selection,
) -> Result<JiraProbe, ProbeError> {
    let mut s = Sender {
        client,
        credential,
        sent: 0,
    };
    let (visible, projects) = list_projects(&mut s, selection).await?;
    let keys: Vec<&str> = projects.iter().map(|(_, k)| k.as_str()).collect();
    let mut project_issues = Vec::new();
    for i in spread(keys.len(), PROJECT_SAMPLE) {
        project_issues.push(s.count(&condition(&keys[i..=i], selection)?).await?);
    }
    let issues = if keys.len() <= PROJECT_SAMPLE {
        project_issues.iter().sum()
    } else {
        s.count(&condition(&keys, selection)?).await?
    };
    let issue_samples = if keys.is_empty() || issues == 0 {
        Vec::new()
    } else {
        sample_issues(&mut s, &condition(&keys, selection)?, selection.worklogs).await?
    };
    let ids: Vec<i64> = projects.iter().map(|(id, _)| *id).collect();
    let boards = boards(&mut s, &ids).await?;
    Ok(JiraProbe {
        visible_projects: visible,
        projects: keys.len() as u64,
        issues,
        project_issues,
        issue_samples,
        boards: boards.boards,
        scrum_boards: boards.scrum.len() as u64,
        sprint_samples: boards.sprints,
        agile_refused: boards.refused,
        worklogs: selection.worklogs,
        requests: s.sent,
    })
}

/// The projects the credential can browse (how many), and those selected (id, key).
async fn list_projects(
    s: &mut Sender<'_>,
    selection: &Selection,
) -> Result<(u64, Vec<(i64, String)>), ProbeError> {
    let mut start = 0;
    let mut visible = 0;
    let mut selected = Vec::new();
    loop {
        let path = format!(
            "/rest/api/3/project/search?startAt={start}&maxResults={PROJECT_PAGE}&orderBy=key"
        );
        let body = s.get(&path, "GET /rest/api/3/project/search").await?;
        let (values, next) = offset_page(&body, "values", start);
        visible = visible.max(body.get("total").and_then(Value::as_u64).unwrap_or(0));
        visible = visible.max(start + values.len() as u64);
        for p in &values {
            let key = p.get("key").and_then(Value::as_str);
            let id = p
                .get("id")
                .and_then(|v| v.as_str().and_then(|t| t.parse().ok()).or(v.as_i64()));
            if let (Some(key), Some(id)) = (key, id)
                && selection.selects(key)
            {
                selected.push((id, key.to_owned()));
            }
        }
        match next {
            Some(n) => start = n,
            None => return Ok((visible, selected)),
        }
    }
}

/// [`ISSUE_SAMPLE`] issues of `condition` with their comments' `total`, and the changelog
/// (and worklogs) of [`CHILD_SAMPLE`] of them.
async fn sample_issues(
    s: &mut Sender<'_>,
    condition: &str,
    worklogs: bool,
) -> Result<Vec<IssueSample>, ProbeError> {
    let body = json!({
        "jql": format!("{condition} ORDER BY updated ASC, id ASC"),
        "fields": ["comment"],
        "maxResults": ISSUE_SAMPLE,
    });
    let request = post_read(
        "/rest/api/3/search/jql",
        &body,
        route::JIRA_SYNC_PLAN,
        "POST /rest/api/3/search/jql",
    );
    let page = s.json(request).await?;
    let items = page
        .get("issues")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut samples = Vec::new();
    for (i, issue) in items.iter().take(ISSUE_SAMPLE).enumerate() {
        let comments = issue
            .pointer("/fields/comment/total")
            .and_then(Value::as_u64)
            .ok_or(ProbeError::Unreadable("search/jql: comment"))?;
        let mut sample = IssueSample {
            comments,
            ..IssueSample::default()
        };
        let key = issue.get("key").and_then(Value::as_str);
        if let (true, Some(key)) = (i < CHILD_SAMPLE, key) {
            sample.changelog =
                Some(total(s, key, "changelog", "GET /rest/api/3/issue/{key}/changelog").await?);
            if worklogs {
                sample.worklogs =
                    Some(total(s, key, "worklog", "GET /rest/api/3/issue/{key}/worklog").await?);
            }
        }
        samples.push(sample);
    }
    Ok(samples)
}

/// The `total` of issue `key`'s child list `list`, from a page of one.
async fn total(
    s: &mut Sender<'_>,
    key: &str,
    list: &'static str,
    endpoint: &str,
) -> Result<u64, ProbeError> {
    let path = format!("/rest/api/3/issue/{key}/{list}?startAt=0&maxResults=1");
    let body = s.get(&path, endpoint).await?;
    body.get("total")
        .and_then(Value::as_u64)
        .ok_or(ProbeError::Unreadable(list))
}

/// What the probe saw of the boards.
#[derive(Debug, Default)]
struct Boards {
    boards: u64,
    /// Scrum boards of the selected projects.
    scrum: Vec<i64>,
    sprints: Vec<u64>,
    refused: bool,
}

/// Every board (as stage `boards` lists them), the scrum boards of `projects`, and the
/// sprints of [`BOARD_SAMPLE`] of them. A caller without Jira Software access (403) has none.
async fn boards(s: &mut Sender<'_>, projects: &[i64]) -> Result<Boards, ProbeError> {
    let mut out = Boards::default();
    let mut start = 0;
    loop {
        let path = format!("/rest/agile/1.0/board?startAt={start}&maxResults={AGILE_PAGE}");
        let body = match s.get(&path, "GET /rest/agile/1.0/board").await {
            Ok(body) => body,
            Err(ProbeError::Api(ApiError::Forbidden { status: 403, .. })) => {
                out.refused = true;
                return Ok(out);
            }
            Err(e) => return Err(e),
        };
        let (values, next) = offset_page(&body, "values", start);
        out.boards += values.len() as u64;
        for b in &values {
            let project = b.pointer("/location/projectId").and_then(Value::as_i64);
            let scrum = b.get("type").and_then(Value::as_str) == Some("scrum");
            if let (true, Some(p), Some(id)) = (scrum, project, b.get("id").and_then(Value::as_i64))
                && projects.contains(&p)
            {
                out.scrum.push(id);
            }
        }
        match next {
            Some(n) => start = n,
            None => break,
        }
    }
    for i in spread(out.scrum.len(), BOARD_SAMPLE) {
        let sprints = sprints(s, out.scrum[i]).await?;
        out.sprints.push(sprints);
    }
    Ok(out)
}

/// The sprints of scrum board `board`, counted page by page (the listing has no total).
async fn sprints(s: &mut Sender<'_>, board: i64) -> Result<u64, ProbeError> {
    let mut start = 0;
    for _ in 0..SPRINT_PAGES {
        let path =
            format!("/rest/agile/1.0/board/{board}/sprint?startAt={start}&maxResults={AGILE_PAGE}");
        let endpoint = "GET /rest/agile/1.0/board/{boardId}/sprint";
        let body = match s.get(&path, endpoint).await {
            Ok(body) => body,
            Err(ProbeError::Api(ApiError::Status { status: 400, .. } | ApiError::Gone { .. })) => {
                return Ok(start);
            }
            Err(e) => return Err(e),
        };
        let (_, next) = offset_page(&body, "values", start);
        match next {
            Some(n) => start = n,
            None => {
                let shown = body
                    .get("values")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                return Ok(start + shown as u64);
            }
        }
    }
    Ok(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_asks_the_selections_condition_without_its_order() {
        let narrow = Selection {
            jql: Some("status = Done".into()),
            ..Selection::default()
        };
        let c = condition(&["PA", "PB"], &narrow).expect("a condition");
        assert!(!c.contains("ORDER BY"), "{c}");
        assert!(
            c.contains("PA") && c.contains("PB") && c.contains("(status = Done)"),
            "{c}"
        );
        assert!(condition(&[], &narrow).is_err());
        assert_eq!(spread(3, 5), vec![0, 1, 2]);
        assert_eq!(spread(10, 5), vec![0, 2, 4, 6, 8]);
    }
}
