"""``nami mcp serve``: hand nami's tools to other agents (Claude Code, Codex, Cursor, Goose…) over MCP.

Thin: options are checked here, the project and its guards come from the library (``app.serving``), and the
protocol from ``nami_yaml.mcp`` (imported only here, after the SDK is known to be installed).
"""

from __future__ import annotations

import os
import sys

import click

from nami_yaml.app.options import AgentOptions
from nami_yaml.cli.common import config_option, handle_errors
from nami_yaml.cli.run import parse_risks
from nami_yaml.config.effective import Effective
from nami_yaml.config.mcp_servers import McpServerSpec
from nami_yaml.display import plural
from nami_yaml.errors import ConfigError

MIN_TOKEN_LENGTH = 16


@click.group("mcp")
def mcp_group() -> None:
    """Serve nami's tools over MCP (Model Context Protocol); log in to the MCP servers agent.yaml uses."""


@mcp_group.command("serve")
@config_option
@click.option("--tools", "-t", "tool_paths", multiple=True, metavar="PATH", type=click.Path(),
              help="Serve the tool files at PATH (file, folder or glob) without an agent.yaml; repeatable.")
@click.option("--approve", "approve_risks", metavar="RISKS", callback=parse_risks,
              help="Run calls of these risks that the policy would ask about, e.g. read,write (never a deny).")
@click.option("--target", metavar="NAME",
              help="Run every call of a targeted tool on this target of agent.yaml (clients are not offered the choice).")
@click.option("--builtins", "include_builtins", is_flag=True,
              help="Also serve the agent's built-in tools (read_file, bash…), which clients usually have already.")
@click.option("--agents", "serve_agents", is_flag=True,
              help="Also serve this project's named agents as agent__NAME tools (they run on agent.yaml's model).")
@click.option("--http", "address", metavar="HOST:PORT",
              help="Serve streamable HTTP at http://HOST:PORT/mcp (e.g. 127.0.0.1:8765) instead of stdio.")
@click.option("--allow-remote", is_flag=True, help="Let --http bind an address other than loopback (needs --token-env).")
@click.option("--token-env", metavar="NAME",
              help="Require the header `Authorization: Bearer TOKEN` over HTTP, TOKEN read from $NAME.")
@click.option("--allow-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="Over HTTP, also accept requests naming NAME in Host (a DNS name or proxy clients use); "
                   "repeatable. The addresses served are always accepted.")
@handle_errors
def serve(config: str | None, tool_paths: tuple[str, ...], approve_risks: tuple[str, ...], target: str | None,
          include_builtins: bool, serve_agents: bool, address: str | None, allow_remote: bool, token_env: str | None,
          allowed_hosts: tuple[str, ...]) -> None:
    """Serve the tools of this project's agent.yaml (or of --tools PATH) to an MCP client, over stdio (the
    default: the client starts `nami mcp serve`) or streamable HTTP (--http).

    Every call is validated, decided by the project's rules and permissions, run and recorded in the audit
    log exactly as the model's calls are. Nobody can be asked: a call the policy would ask about is refused,
    naming the rule, unless its risk is listed in --approve. A project's agent.yaml must be trusted first
    (`nami trust`).
    """
    from nami_yaml.mcp import require_sdk

    require_sdk("nami mcp serve")
    listen = _listen_address(address, allow_remote, token_env) if address else None
    token = _token(token_env) if token_env else None
    if token_env and not address:
        raise click.UsageError("--token-env protects --http; over stdio the client that starts nami is the only one")
    if allowed_hosts and not address:
        raise click.UsageError("--allow-host is for --http")
    from nami_yaml.serve.server import serve_http, serve_stdio
    from nami_yaml.serve.serving import serve_tools

    served = serve_tools(_options(config, tool_paths, approve_risks, target), include_builtins=include_builtins,
                         agents=serve_agents)
    if not served.tools:
        raise ConfigError("there are no tools to serve" + ("" if include_builtins else
                                                           " (built-in tools are served only with --builtins)"))
    names = ", ".join(tool.name for tool in served.tools)
    if target is not None:
        names += f" (every call of a targeted tool runs on target {target})"
    if listen is None:
        click.echo(f"nami mcp: serving {plural(len(served.tools), 'tool')} over stdio: {names}", err=True)
        serve_stdio(served)
        return
    host, port = listen

    def ready(url: str) -> None:
        click.echo(f"nami mcp: serving {plural(len(served.tools), 'tool')} at {url}: {names}", err=True)
        sys.stderr.flush()

    serve_http(served, host, port, token=token, on_ready=ready, allowed_hosts=allowed_hosts)


def _options(config: str | None, tool_paths: tuple[str, ...], approve_risks: tuple[str, ...],
             target: str | None) -> AgentOptions:
    """What to serve: the project's agent.yaml, which must be trusted (nobody is asked); or, with --tools
    and no --config, only those tool files (no agent.yaml is looked for, no built-ins)."""
    alone = bool(tool_paths) and not config
    return AgentOptions(config=config, tools=tool_paths, approve_risks=approve_risks, via="mcp", start_servers=False,
                        discover=not alone, settings={"tools.builtin": []} if alone else {}, target=target)


def _listen_address(address: str, allow_remote: bool, token_env: str | None) -> tuple[str, int]:
    from nami_yaml.serve.hosts import is_loopback

    host, sep, port_text = address.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise click.BadParameter(f"{address!r}: give HOST:PORT, e.g. 127.0.0.1:8765", param_hint="--http")
    if not is_loopback(host.strip("[]")):
        if not allow_remote:
            raise click.BadParameter(f"{host} is not a loopback address: anyone who can reach it could run these "
                                     "tools. Add --allow-remote with --token-env NAME to require a bearer token",
                                     param_hint="--http")
        if not token_env:
            raise click.BadParameter("--allow-remote needs --token-env NAME: a bearer token every request must "
                                     "carry", param_hint="--token-env")
    return host, int(port_text)


def _token(name: str) -> str:
    token = os.environ.get(name, "")
    if len(token) < MIN_TOKEN_LENGTH:
        what = "is not set" if not token else f"is shorter than {MIN_TOKEN_LENGTH} characters"
        raise click.BadParameter(f"${name} {what}; put a long random token in it (e.g. `openssl rand -hex 32`)",
                                 param_hint="--token-env")
    return token


@mcp_group.command("login")
@config_option
@click.argument("server")
@handle_errors
def login(config: str | None, server: str) -> None:
    """Log in to SERVER, an HTTP MCP server of agent.yaml's mcp_servers that asks for OAuth.

    Prints the URL to open in a browser and waits for its redirect to 127.0.0.1, or for that redirect's
    address pasted here (a login over SSH). The tokens are kept in nami's state folder, readable only by
    you, for the server's URL; runs use them (and refresh them) from then on.
    """
    from nami_yaml.mcp import require_sdk

    require_sdk("nami mcp login")
    spec, headers = _http_server(config, server)
    from nami_yaml.mcp.login import login as oauth_login

    def show(url: str, redirect: str) -> None:
        click.echo(f"To log in to MCP server {server} ({spec.url}), open this URL in a browser:\n\n  {url}\n\n"
                   f"nami waits for the browser to come back to {redirect}.\n"
                   "Logged in over SSH, with the browser on another machine? There that page will not load: copy "
                   "its whole address from the browser's address bar, paste it here and press Enter.")

    assert spec.url is not None
    result = oauth_login(spec.url, headers, show_url=show, stdin=sys.stdin)
    issuer = f" by {result.issuer}" if result.issuer else ""
    click.echo(f"Logged in to MCP server {server}{issuer}: it offers {plural(result.tools, 'tool')}. "
               f"The tokens are in {result.path} (readable only by you).")


@mcp_group.command("logout")
@config_option
@click.argument("server")
@handle_errors
def logout(config: str | None, server: str) -> None:
    """Forget the tokens `nami mcp login SERVER` stored for SERVER's URL."""
    from nami_yaml.mcp.token_store import TokenStore

    spec, _ = _server_spec(config, server)
    assert spec.url is not None
    removed = TokenStore().remove(spec.url)
    if removed:
        click.echo(f"Logged out of MCP server {server}: its tokens for {spec.url} are deleted. (The server may "
                   "honour them until they expire.)")
    else:
        click.echo(f"nami holds no login for MCP server {server} ({spec.url}).")


def _server_spec(config: str | None, name: str) -> tuple[McpServerSpec, Effective]:
    """The HTTP server ``name`` of the project's (and user config's) mcp_servers, and the settings."""
    from nami_yaml.config.mcp_servers import server_specs
    from nami_yaml.config.settings import load_settings
    from nami_yaml.project_request import ProjectRequest

    effective = load_settings(ProjectRequest(config=config))
    specs = {spec.name: spec for spec in server_specs(effective)}
    spec = specs.get(name)
    if spec is None:
        known = ", ".join(sorted(specs)) or "none"
        raise ConfigError(f"agent.yaml has no MCP server {name!r} (its mcp_servers: {known})")
    if not spec.url:
        raise ConfigError(f"MCP server {name} is a command nami starts (stdio): it has no login; OAuth is for "
                          "servers reached by url:")
    return spec, effective


def _http_server(config: str | None, name: str) -> tuple[McpServerSpec, dict[str, str]]:
    """The server and the headers a login sends it. Headers that take your variables are sent only for a
    server of your user config or of a trusted project: an untrusted agent.yaml chooses the URL."""
    from nami_yaml.config.effective import protected_env_names
    from nami_yaml.config.mcp_servers import McpConfigError, expand
    from nami_yaml.config.trust import needs_trust, trust_state

    spec, effective = _server_spec(config, name)
    if any(key.lower() == "authorization" for key in spec.headers):
        raise ConfigError(f"MCP server {name} gets its token from headers: (Authorization, {spec.where}); nami "
                          "logs in only to servers without one")
    if spec.variables() and spec.in_project and needs_trust(effective) and not trust_state(effective).trusted:
        raise ConfigError(f"MCP server {name}'s headers take your variables, and this project's agent.yaml is "
                          "not trusted: run `nami trust` first")
    try:
        headers = {key: expand(value, os.environ, protected_env_names(effective)) for key, value in spec.headers.items()}
    except McpConfigError as exc:
        raise ConfigError(f"MCP server {name} ({spec.where}): {exc}") from None
    return spec, headers
