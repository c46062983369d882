"""Every library tool, run against a stub program that records its argv: the command each call renders, for
typical and edge arguments. Between them, the cases call every tool of the library."""

from __future__ import annotations

from typing import Any

import pytest

from tests.library.conftest import LibraryRunner, Stubs, all_library_tools

# (tool, arguments, the command the program is started with)
CASES: list[tuple[str, dict[str, Any], list[Any]]] = [
    # git
    ("git_status", {}, ["git", "status", "--short", "--branch", "--untracked-files=normal", "--"]),
    ("git_status", {"untracked": "no", "paths": ["src", "a b.txt"]},
     ["git", "status", "--short", "--branch", "--untracked-files=no", "--", "src", "a b.txt"]),
    ("git_log", {}, ["git", "log", "--oneline", "--no-decorate", "--max-count=20", "--"]),
    ("git_log", {"author": "ann", "since": "2 weeks ago", "until": "yesterday", "grep": "fix", "all": True,
                 "stat": True, "revision": "main..feature", "max_count": 5, "paths": ["src", "docs"]},
     ["git", "log", "--oneline", "--no-decorate", "--max-count=5", "--author=ann", "--since=2 weeks ago",
      "--until=yesterday", "--grep=fix", "--all", "--stat", "main..feature", "--", "src", "docs"]),
    # a value inside "--author=..." cannot become an option, so a leading dash is harmless there
    ("git_log", {"author": "-x"}, ["git", "log", "--oneline", "--no-decorate", "--max-count=20", "--author=-x", "--"]),
    ("git_diff", {}, ["git", "diff", "--no-ext-diff", "--no-textconv", "--unified=3", "--"]),
    ("git_diff", {"staged": True, "stat": True, "paths": ["README.md"]},
     ["git", "diff", "--no-ext-diff", "--no-textconv", "--unified=3", "--staged", "--stat", "--", "README.md"]),
    ("git_diff", {"base": "main", "head": "HEAD~1", "context": 0},
     ["git", "diff", "--no-ext-diff", "--no-textconv", "--unified=0", "main", "HEAD~1", "--"]),
    ("git_show", {}, ["git", "show", "--no-ext-diff", "--no-textconv", "HEAD", "--"]),
    ("git_show", {"revision": "v1.2:setup.py", "stat": True},
     ["git", "show", "--no-ext-diff", "--no-textconv", "--stat", "v1.2:setup.py", "--"]),
    ("git_blame", {"path": "src/app.py"}, ["git", "blame", "--date=short", "--", "src/app.py"]),
    ("git_blame", {"path": "-weird.py", "lines": "40,60", "revision": "HEAD~2"},
     ["git", "blame", "--date=short", "-L", "40,60", "HEAD~2", "--", "-weird.py"]),
    ("git_branch", {}, ["git", "branch", "--list", "--verbose", "--sort=refname"]),
    ("git_branch", {"all": True, "contains": "abc123", "merged": "main", "sort": "-committerdate",
                    "patterns": ["release/*", "hotfix/*"]},
     ["git", "branch", "--list", "--verbose", "--sort=-committerdate", "--all", "--contains", "abc123",
      "--merged", "main", "release/*", "hotfix/*"]),
    # kubectl
    ("kubectl_get", {"kind": "pods"}, ["kubectl", "get", "pods"]),
    ("kubectl_get", {"kind": "deployments", "name": "web", "selector": "app=web,tier!=db", "output": "yaml",
                     "namespace": "shop"},
     ["kubectl", "get", "deployments", "web", "-l", "app=web,tier!=db", "-o", "yaml", "--namespace", "shop"]),
    ("kubectl_get", {"kind": "pods", "all_namespaces": True, "field_selector": "status.phase!=Running",
                     "output": "wide"},
     ["kubectl", "get", "pods", "--field-selector", "status.phase!=Running", "-o", "wide", "--all-namespaces"]),
    ("kubectl_pods", {}, ["kubectl", "get", "pods", "-o", "json"]),
    ("kubectl_pods", {"selector": "app=web", "field_selector": "status.phase!=Running", "namespace": "shop",
                      "all_namespaces": True},
     ["kubectl", "get", "pods", "-o", "json", "-l", "app=web", "--field-selector", "status.phase!=Running",
      "--namespace", "shop", "--all-namespaces"]),
    ("kubectl_describe", {"kind": "nodes"}, ["kubectl", "describe", "nodes"]),
    ("kubectl_describe", {"kind": "pods", "selector": "app=web", "namespace": "shop"},
     ["kubectl", "describe", "pods", "-l", "app=web", "--namespace", "shop"]),
    ("kubectl_logs", {"pod": "web-7d9f-abcde"}, ["kubectl", "logs", "web-7d9f-abcde", "--tail=200"]),
    ("kubectl_logs", {"pod": "deployment/web", "container": "app", "tail": 50, "since": "30m", "previous": True,
                      "timestamps": True, "namespace": "shop"},
     ["kubectl", "logs", "deployment/web", "--tail=50", "-c", "app", "--since=30m", "--previous", "--timestamps",
      "--namespace", "shop"]),
    ("kubectl_logs", {"pod": "web-1", "all_containers": True},
     ["kubectl", "logs", "web-1", "--tail=200", "--all-containers"]),
    ("kubectl_top", {}, ["kubectl", "top", "pods"]),
    ("kubectl_top", {"resource": "nodes", "sort_by": "memory"}, ["kubectl", "top", "nodes", "--sort-by", "memory"]),
    ("kubectl_top", {"containers": True, "all_namespaces": True, "selector": "app=web"},
     ["kubectl", "top", "pods", "-l", "app=web", "--containers", "--all-namespaces"]),
    ("kubectl_events", {}, ["kubectl", "events"]),
    ("kubectl_events", {"object": "pod/web-1", "types": ["Warning", "Normal"], "namespace": "shop"},
     ["kubectl", "events", "--for", "pod/web-1", "--types", "Warning", "--types", "Normal", "--namespace", "shop"]),
    ("kubectl_diff", {"paths": ["k8s/"]}, ["kubectl", "diff", "-f", "k8s/"]),
    ("kubectl_diff", {"paths": ["a.yaml", "b.yaml"], "recursive": True},
     ["kubectl", "diff", "-f", "a.yaml", "-f", "b.yaml", "--recursive"]),
    ("kubectl_apply", {"paths": ["k8s/web.yaml"]}, ["kubectl", "apply", "-f", "k8s/web.yaml", "--dry-run=none"]),
    ("kubectl_apply", {"paths": ["k8s/", "extra.yaml"], "recursive": True, "dry_run": "server", "namespace": "shop"},
     ["kubectl", "apply", "-f", "k8s/", "-f", "extra.yaml", "--recursive", "--dry-run=server", "--namespace", "shop"]),
    ("kubectl_rollout_status", {"name": "web"}, ["kubectl", "rollout", "status", "deployment/web", "--timeout=120s"]),
    ("kubectl_rollout_status", {"kind": "statefulset", "name": "db", "wait": 30, "namespace": "data"},
     ["kubectl", "rollout", "status", "statefulset/db", "--timeout=30s", "--namespace", "data"]),
    ("kubectl_rollout_history", {"name": "web"}, ["kubectl", "rollout", "history", "deployment/web"]),
    ("kubectl_rollout_history", {"name": "web", "revision": 3},
     ["kubectl", "rollout", "history", "deployment/web", "--revision=3"]),
    ("kubectl_rollout_restart", {"name": "web", "namespace": "shop"},
     ["kubectl", "rollout", "restart", "deployment/web", "--namespace", "shop"]),
    ("kubectl_rollout_undo", {"name": "web"}, ["kubectl", "rollout", "undo", "deployment/web"]),
    ("kubectl_rollout_undo", {"kind": "daemonset", "name": "agent", "to_revision": 4},
     ["kubectl", "rollout", "undo", "daemonset/agent", "--to-revision=4"]),
    ("kubectl_scale", {"name": "web", "replicas": 0}, ["kubectl", "scale", "deployment/web", "--replicas=0"]),
    ("kubectl_scale", {"kind": "statefulset", "name": "db", "replicas": 3, "current_replicas": 2, "namespace": "data"},
     ["kubectl", "scale", "statefulset/db", "--replicas=3", "--current-replicas=2", "--namespace", "data"]),
    # docker
    ("docker_containers", {}, ["docker", "ps", "--no-trunc", "--format", "json"]),
    ("docker_containers", {"all": True, "filters": ["status=exited", "name=web"], "last": 3},
     ["docker", "ps", "--no-trunc", "--format", "json", "--all", "--filter", "status=exited", "--filter", "name=web",
      "--last=3"]),
    ("docker_ps", {}, ["docker", "ps", "--no-trunc"]),
    ("docker_ps", {"all": True, "filters": ["status=exited", "label=app=web"], "size": True, "last": 5},
     ["docker", "ps", "--no-trunc", "--all", "--filter", "status=exited", "--filter", "label=app=web", "--size",
      "--last=5"]),
    ("docker_logs", {"container": "web"}, ["docker", "logs", "--tail=200", "web"]),
    ("docker_logs", {"container": "web", "tail": 20, "since": "30m", "until": "2024-05-01T10:00:00",
                     "timestamps": True},
     ["docker", "logs", "--tail=20", "--since=30m", "--until=2024-05-01T10:00:00", "--timestamps", "web"]),
    ("docker_inspect", {"targets": ["web"]}, ["docker", "inspect", "web"]),
    ("docker_inspect", {"targets": ["nginx:1.27", "sha256:abc"], "type": "image", "format": "{{json .Config}}"},
     ["docker", "inspect", "--type=image", "--format={{json .Config}}", "nginx:1.27", "sha256:abc"]),
    ("docker_images", {}, ["docker", "images"]),
    ("docker_images", {"repository": "nginx", "all": True, "digests": True, "filters": ["dangling=false"]},
     ["docker", "images", "--all", "--digests", "--filter", "dangling=false", "nginx"]),
    # systemd
    ("systemd_status", {"units": ["nginx.service"]},
     ["systemctl", "status", "--no-pager", "--full", "--lines=10", "--", "nginx.service"]),
    ("systemd_status", {"units": ["nginx", "getty@tty1.service"], "lines": 0, "user": True},
     ["systemctl", "status", "--no-pager", "--full", "--lines=0", "--user", "--", "nginx", "getty@tty1.service"]),
    ("systemd_journal", {}, ["journalctl", "--no-pager", "--output=short-iso", "--lines=200"]),
    ("systemd_journal", {"units": ["nginx.service", "php-fpm"], "since": "-30m", "until": "now", "priority": "err",
                         "grep": "timeout", "lines": 50, "boot": True},
     ["journalctl", "--no-pager", "--output=short-iso", "--lines=50", "--unit", "nginx.service", "--unit", "php-fpm",
      "--since=-30m", "--until=now", "--priority=err", "--grep=timeout", "--boot"]),
    # terraform
    ("terraform_fmt", {}, ["terraform", "-chdir=.", "fmt", "-check", "-diff", "-no-color", "-recursive"]),
    ("terraform_fmt", {"dir": "infra/prod", "recursive": False},
     ["terraform", "-chdir=infra/prod", "fmt", "-check", "-diff", "-no-color"]),
    ("terraform_show", {}, ["terraform", "-chdir=.", "show", "-json", "-no-color"]),
    ("terraform_show", {"dir": "infra/prod"}, ["terraform", "-chdir=infra/prod", "show", "-json", "-no-color"]),
    ("terraform_validate", {}, ["terraform", "-chdir=.", "validate", "-no-color"]),
    ("terraform_validate", {"dir": "infra", "json": True}, ["terraform", "-chdir=infra", "validate", "-no-color", "-json"]),
    ("terraform_plan", {}, ["terraform", "-chdir=.", "plan", "-input=false", "-no-color", "-lock-timeout=60s",
                            "-refresh=true"]),
    ("terraform_plan", {"dir": "infra", "targets": ["aws_instance.web", "module.db"], "var_files": ["prod.tfvars"],
                        "destroy": True, "refresh": False},
     ["terraform", "-chdir=infra", "plan", "-input=false", "-no-color", "-lock-timeout=60s", "-refresh=false",
      "-target", "aws_instance.web", "-target", "module.db", "-var-file", "prod.tfvars", "-destroy"]),
    # its plan step first (runners/plan_step.py: nobody was asked, so not shown), then the apply of that plan
    ("terraform_apply", {"dir": "infra", "targets": ["aws_instance.web"]},
     [["terraform", "-chdir=infra", "plan", "-input=false", "-no-color", "-lock-timeout=60s", "-out={plan_file}",
       "-target", "aws_instance.web"],
      ["terraform", "-chdir=infra", "apply", "-input=false", "-no-color", "-lock-timeout=60s", "{sealed plan_file}"]]),
    # helm
    ("helm_list", {}, ["helm", "list", "--output=table"]),
    ("helm_list", {"filter": "^web", "all": True, "output": "json", "all_namespaces": True},
     ["helm", "list", "--output=json", "--filter=^web", "--all", "--all-namespaces"]),
    ("helm_status", {"release": "web"}, ["helm", "status", "web", "--output=table"]),
    ("helm_status", {"release": "web", "revision": 7, "show_resources": True, "namespace": "shop"},
     ["helm", "status", "web", "--output=table", "--revision=7", "--show-resources", "--namespace", "shop"]),
    ("helm_history", {"release": "web"}, ["helm", "history", "web", "--max=20", "--output=table"]),
    ("helm_history", {"release": "web", "max": 5, "output": "yaml"},
     ["helm", "history", "web", "--max=5", "--output=yaml"]),
    # jq
    ("jq_filter", {"filter": ".items | length", "json": "{}"}, ["jq", ".items | length"]),
    ("jq_filter", {"filter": ".[]", "json": "[1]", "raw": True, "compact": True, "slurp": True},
     ["jq", "-r", "-c", "-s", ".[]"]),
    # http
    ("http_probe", {"url": "https://example.com/health"},
     ["curl", "--disable", "--silent", "--show-error", "--proto", "=http,https", "--proto-redir", "=http,https",
      "--max-redirs", "5", "--request", "GET", "--max-time", "10", "--output", "/dev/null", "--dump-header", "-",
      "--write-out", "WRITE_OUT", "https://example.com/health"]),
    ("http_probe", {"url": "http://10.0.0.5:8080/ready", "method": "HEAD", "timeout": 3,
                    "headers": ["Accept: application/json", "X-Probe: nami"], "follow_redirects": True},
     ["curl", "--disable", "--silent", "--show-error", "--proto", "=http,https", "--proto-redir", "=http,https",
      "--max-redirs", "5", "--request", "HEAD", "--max-time", "3", "--output", "/dev/null", "--dump-header", "-",
      "--write-out", "WRITE_OUT", "-H", "Accept: application/json", "-H", "X-Probe: nami", "--location",
      "http://10.0.0.5:8080/ready"]),
    # system
    ("system_disk_free", {}, ["df", "-h", "--print-type", "--"]),
    ("system_disk_free", {"paths": ["/", "/var"], "types": ["ext4", "xfs"], "inodes": True},
     ["df", "-h", "--print-type", "-i", "-t", "ext4", "-t", "xfs", "--", "/", "/var"]),
    ("system_disk_usage", {}, ["du", "-k", "-d", "1", "--", "."]),
    ("system_disk_usage", {"path": "-odd", "one_file_system": True}, ["du", "-k", "-d", "1", "-x", "--", "-odd"]),
    ("system_processes", {}, ["ps", "-e", "-o", "pid,user,%cpu,%mem,rss,etime,args", "--sort=-%cpu"]),
    ("system_processes", {"sort": "mem", "user": "postgres"},
     ["ps", "-U", "postgres", "-u", "postgres", "-o", "pid,user,%cpu,%mem,rss,etime,args", "--sort=-%mem"]),
]

WRITE_OUT = ("status: %{http_code}\nremote: %{remote_ip}:%{remote_port}\nredirects: %{num_redirects}\n"
             "time_dns: %{time_namelookup}s\ntime_connect: %{time_connect}s\ntime_tls: %{time_appconnect}s\n"
             "time_first_byte: %{time_starttransfer}s\ntime_total: %{time_total}s\nbytes: %{size_download}\n")


def _case_id(case: tuple[str, dict[str, Any], list[str]]) -> str:
    return f"{case[0]}-{len(case[1])}args"


@pytest.mark.parametrize(("tool", "arguments", "expected"), CASES, ids=[_case_id(c) for c in CASES])
def test_rendered_command(library: LibraryRunner, stubs: Stubs, workdir, tool: str, arguments: dict[str, Any],
                          expected: list[str]) -> None:
    if tool == "system_disk_usage":
        (workdir / arguments.get("path", ".")).mkdir(exist_ok=True)
    result = library(tool, **arguments)
    assert result.ok, result.content
    if isinstance(expected[0], list):  # a tool with a plan step: the commands it started, in order
        assert stubs.commands() == expected
        return
    call = stubs.only_call()
    assert call.command == [WRITE_OUT if part == "WRITE_OUT" else part for part in expected]
    assert call.cwd == str(workdir)


def test_the_cases_cover_every_library_tool() -> None:
    assert {case[0] for case in CASES} == set(all_library_tools().names())


def test_jq_gets_its_json_on_stdin_and_other_tools_get_none(library: LibraryRunner, stubs: Stubs) -> None:
    assert library("jq_filter", filter=".a", json='{"a": 1}').ok
    assert stubs.only_call().stdin == '{"a": 1}'
    stubs.clear()
    assert library("kubectl_get", kind="pods").ok
    assert stubs.only_call().stdin == ""
