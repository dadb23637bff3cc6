#!/usr/bin/env python3
"""Cuts GitHub's REST description (@octokit/openapi, api.github.com.json) down to the
operations headroom calls or its simulator serves, with every component they reference.

The result stays OpenAPI 3.0.3 exactly as GitHub wrote it (nothing rewritten, only
removed), so a reader can diff it against the package. Tests that need JSON Schema turn
`nullable: true` into type unions themselves.

Usage: github_rest_subset.py FULL.json OUT.json
"""
import json
import sys

# (method, path) as GitHub's description spells them. Keep sorted by path.
OPERATIONS = [
    ("get", "/events"),
    ("get", "/orgs/{org}"),
    ("get", "/orgs/{org}/members"),
    ("get", "/orgs/{org}/repos"),
    ("post", "/orgs/{org}/repos"),
    ("get", "/orgs/{org}/teams"),
    ("get", "/rate_limit"),
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/actions/runs"),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"),
    ("get", "/repos/{owner}/{repo}/branches"),
    ("get", "/repos/{owner}/{repo}/branches/{branch}"),
    ("get", "/repos/{owner}/{repo}/branches/{branch}/protection"),
    ("put", "/repos/{owner}/{repo}/branches/{branch}/protection"),
    ("get", "/repos/{owner}/{repo}/commits"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("get", "/repos/{owner}/{repo}/contents/{path}"),
    ("put", "/repos/{owner}/{repo}/contents/{path}"),
    ("post", "/repos/{owner}/{repo}/git/blobs"),
    ("post", "/repos/{owner}/{repo}/git/commits"),
    ("get", "/repos/{owner}/{repo}/git/commits/{commit_sha}"),
    ("get", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("post", "/repos/{owner}/{repo}/git/refs"),
    ("patch", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("post", "/repos/{owner}/{repo}/git/trees"),
    ("get", "/repos/{owner}/{repo}/issues"),
    ("get", "/repos/{owner}/{repo}/issues/comments"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("get", "/repos/{owner}/{repo}/pulls"),
    ("post", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/commits"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"),
    ("put", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"),
    ("get", "/search/commits"),
    ("get", "/search/issues"),
    ("get", "/search/repositories"),
    ("get", "/search/users"),
    ("get", "/user"),
    ("post", "/user/repos"),
    ("get", "/user/{account_id}"),
    ("get", "/users/{username}"),
]


def refs(node, found):
    """Every `#/components/...` reference under node."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/components/"):
                found.add(v)
            else:
                refs(v, found)
    elif isinstance(node, list):
        for v in node:
            refs(v, found)


def resolve(doc, ref):
    node = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def main(full_path, out_path):
    with open(full_path, encoding="utf-8") as f:
        doc = json.load(f)
    paths = {}
    for method, path in OPERATIONS:
        item = doc["paths"].get(path)
        if item is None or method not in item:
            sys.exit(f"{method.upper()} {path} is not in {full_path}")
        kept = paths.setdefault(path, {})
        if "parameters" in item:
            kept["parameters"] = item["parameters"]
        kept[method] = item[method]
    # The transitive closure of referenced components.
    seen, todo = set(), set()
    refs(paths, todo)
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        refs(resolve(doc, ref), todo)
    components = {}
    for ref in sorted(seen):
        _, _, kind, name = ref.split("/", 3)
        components.setdefault(kind, {})[name] = doc["components"][kind][name]
    subset = {
        "openapi": doc["openapi"],
        "info": doc["info"],
        "servers": doc.get("servers", []),
        "paths": dict(sorted(paths.items())),
        "components": components,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(subset, f, indent=1, sort_keys=False, ensure_ascii=False)
        f.write("\n")
    print(f"{out_path}: {len(OPERATIONS)} operations, {len(seen)} components")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
