"""The command line every guarded server shares: flags, validation, start-up, clean exit codes.

Bad flags, a missing allow path or an unusable policy file print one line on stderr and exit 2.
stdout belongs to the protocol: nothing here ever writes to it.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import inspect
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Protocol, TextIO, cast

from mcp_server_guard import registry
from mcp_server_guard.audit import AuditLog, default_audit_path, default_state_path, state_dirs
from mcp_server_guard.files.jail import Jail, SymlinkMode
from mcp_server_guard.paths import printable, private_dirs, readable, real_within_any, state_dir, within
from mcp_server_guard.policy import PolicyError, default_policy_path, load_policy
from mcp_server_guard.serving import deadline
from mcp_server_guard.serving.config import Mode, ServerConfig
from mcp_server_guard.serving.distributions import version_of
from mcp_server_guard.serving.front import early_calls, early_calls_on_loop, shutdown_front
from mcp_server_guard.serving.options import as_typer, fast_arguments, option, takes_as_is
from mcp_server_guard.serving.sdk import import_sdk
from mcp_server_guard.serving.tools import Tools

if TYPE_CHECKING:
    import asyncio

    import typer

    from mcp_server_guard.serving.server import GuardedServer

EXIT_USAGE = 2


def directory_arg(value: str) -> Path:
    """A directory argument as given. Threat: a host passes arguments without a shell, so ``""`` (which Path
    reads as the current directory: silently the whole working directory) and ``~/x`` (a literal ``~``) never
    mean what their writer meant: both are refused with what to write instead."""
    if not value.strip() or (value.startswith("~") and not Path(value).exists()):
        import typer  # noqa: PLC0415 - (a value refused: typer reads this command line, ``options``)

        if not value.strip():
            raise typer.BadParameter("is empty: name a directory")
        raise typer.BadParameter(
            f"{value}: '~' is not expanded here (an MCP host passes arguments as they are, without a shell): "
            f"write the full path, e.g. {os.path.expanduser(value)}"
        )
    return Path(value)


takes_as_is(directory_arg, lambda value: bool(value.strip()) and not value.startswith("~"))

AllowPathOpt = Annotated[
    list[Path] | None,
    option(
        "--allow-path",
        parser=directory_arg,
        metavar="DIR",
        help="Directory the tool may use besides the launch directory (repeatable).",
        show_default=False,
    ),
]
SymlinksOpt = Annotated[
    SymlinkMode,
    option("--symlinks", help="follow: only symlinks that stay inside the jail; reject: none at all."),
]
LaunchDirOpt = Annotated[
    Path | None,
    option(
        "--launch-dir",
        parser=directory_arg,
        metavar="DIR",
        help="Use DIR as the launch directory (an allowed root, and the base of relative paths) instead of the "
        "current directory: for hosts that cannot set a server's working directory.",
        show_default=False,
    ),
]
PolicyOpt = Annotated[
    Path | None,
    option("--policy", metavar="FILE", help="TOML policy merged over the default.", show_default=False),
]
AuditLogOpt = Annotated[
    Path | None,
    option(
        "--audit-log",
        metavar="FILE",
        help="Audit log file [default: $XDG_STATE_HOME/mcp-guard/audit.jsonl].",
        show_default=False,
    ),
]


ModeOpt = Annotated[
    Mode,
    option(
        "--mode",
        help="read-only: file_write refuses every write, shell_exec runs commands on a read-only view (the "
        "read-only allow-list where there is no box); "
        "workspace-write: the defaults; full-access: no kernel box around commands (policy deny rules still apply).",
    ),
]
HistoryDirOpt = Annotated[
    Path | None,
    option(
        "--history-dir",
        metavar="DIR",
        help="Where previous contents of replaced files are kept [default: $XDG_STATE_HOME/mcp-guard/history].",
        show_default=False,
    ),
]


class LogLevel(enum.StrEnum):
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


LogLevelOpt = Annotated[LogLevel, option("--log-level", help="Log level on stderr.", case_sensitive=False)]


def usage_error(prog: str, message: str) -> NoReturn:
    """Say ``message`` on stderr and exit 2; its control and bidi characters escaped, its lines kept (red team 91
    F2: a path given or kept — ``--allow-path``, a history entry's — repainting the person's terminal)."""
    print(f"{prog}: error: {readable(message)}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def package_version(distribution: str) -> str:
    """``importlib.metadata.version``, read without importing it where that gives the same (``distributions``)."""
    known = version_of(distribution)
    if known is not None:
        return known
    from importlib import metadata  # noqa: PLC0415 - a tenth of a start-up's imports: only when needed

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def version_callback(distribution: str, prog: str = "") -> Callable[[bool], None]:
    """``--version``: the program's name (what the person typed), its version, and the distribution it comes in
    when that has another name (``mcp-guard 0.1.0 (mcp-server-guard)``)."""

    def show(value: bool) -> None:
        if value:
            name = prog or distribution
            shown = f"{name} {package_version(distribution)}"
            print(shown if name == distribution else f"{shown} ({distribution})")
            import typer  # noqa: PLC0415 - (read by typer: ``--version`` is never read without it)

            raise typer.Exit()

    return show


def build_config(
    *,
    prog: str,
    name: str,
    distribution: str,
    allow_path: Sequence[Path] | None,
    symlinks: SymlinkMode,
    launch_dir: Path | None = None,
    policy: Path | None,
    audit_log: Path | None,
    log_level: str,
    mode: Mode = Mode.WORKSPACE_WRITE,
) -> ServerConfig:
    """Validate the shared flags into a ServerConfig, or exit 2 with one line on stderr."""
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr, format=f"{prog}: %(levelname)s %(message)s")
    paths: list[str] = []
    for raw in allow_path or ():
        if "\x00" in str(raw):
            usage_error(prog, "--allow-path contains a NUL byte")
        if not raw.is_dir():
            usage_error(prog, f"--allow-path {raw}: no such directory")
        paths.append(str(raw.absolute()))
    implicit_readonly = policy is None and mode is Mode.READ_ONLY
    if implicit_readonly:
        policy = default_policy_path().with_name("readonly.toml")  # the packaged read-only allow-list
    try:
        loaded = load_policy(policy)
    except PolicyError as exc:
        usage_error(prog, str(exc))
    if launch_dir is not None and not launch_dir.is_dir():
        usage_error(prog, f"--launch-dir {launch_dir}: no such directory")
    launch = str(launch_dir.absolute()) if launch_dir is not None else os.getcwd()
    if os.path.realpath(launch) in ("/", os.path.realpath(os.path.expanduser("~"))):
        logging.getLogger("mcp_server_guard").warning(
            "the launch directory %s is an allowed root: everything below it is in the jail "
            "(start the server in the project, or pass --launch-dir)",
            launch,
        )
    try:
        jail = Jail(launch, paths, symlinks)
    except OSError as exc:
        usage_error(prog, f"cannot open an allowed directory: {exc.strerror}")
    make_state_dirs([r.path for r in jail.allowed])
    try:
        audit_path = audit_log if audit_log is not None else default_audit_path(r.path for r in jail.allowed)
    except OSError as exc:
        usage_error(prog, f"cannot open the audit log: {exc.strerror or exc}")
    state_in_use(prog, audit_path.absolute())
    # Threat: a policy file in a project (a team's guard.toml) that another server of the user may write (its
    # file_write serves the project without --policy): a protected list rewritten there disarms this server at its
    # next start. Registered like the state files: hidden from every server's tools and commands, this one's too.
    # (The packaged one, first, lies with the servers' code: protected.)
    for source in loaded.source[1:]:
        state_hidden(Path(source).absolute())
    for directory in state_dirs():  # the default places (copies, spools, history) that lie outside the jail
        if directory.is_dir() and not real_within_any(directory, [r.path for r in jail.allowed]):
            state_in_use(prog, directory)
            break
    try:
        audit = AuditLog(audit_path)
    except OSError as exc:
        usage_error(prog, f"cannot open the audit log: {exc.strerror or exc}")
    logging.getLogger("mcp_server_guard").debug("audit log: %s", audit_path)
    return ServerConfig(
        name=name,
        version=package_version(distribution),
        jail=jail,
        policy=loaded,
        audit=audit,
        log_level=log_level.upper(),
        mode=mode,
        implicit_readonly=implicit_readonly,
    )


def make_state_dirs(roots: list[str]) -> None:
    """Make each default state directory that lies inside the jail, so the box and the jail have something to
    hide there (a hidden path that does not exist yet cannot be masked; a command could make it)."""
    for directory in state_dirs():
        if real_within_any(directory, roots):
            with contextlib.suppress(OSError):
                private_dirs(directory)


def resolve_history_dir(prog: str, given: Path | None, config: ServerConfig) -> Path:
    """The history store: outside the jail by default; an explicit one inside it is refused."""
    roots = [r.path for r in config.jail.allowed]
    try:
        path = given.absolute() if given is not None else default_state_path("history", roots)
    except OSError as exc:
        usage_error(prog, str(exc))
    if real_within_any(path, roots):
        usage_error(prog, f"--history-dir {path} lies inside the allowed directories; the tool could rewrite it")
    state_in_use(prog, path)
    return path


_STATE: list[Path] = []  # the state directories this process uses (registered once it serves)


def state_in_use(prog: str, path: Path) -> None:
    """``path`` is a state directory (or file: the audit log) of this process. Refused (exit 2) when it lies
    inside a root another running server of the user serves: that server's commands could read it or forge what
    is in it (``registry``)."""
    clash = registry.inside_served([path])
    if clash is not None:
        real, other = clash
        usage_error(prog, printable(
            f"the state directory {real} lies inside a directory another running server of yours allows "
            f"(pid {other.pid}: {', '.join(other.roots)}); its commands could rewrite it. Pass another "
            "--audit-log/--history-dir/--approvals-file or XDG_STATE_HOME"
        ))  # fmt: skip
    _STATE.append(path)


def state_hidden(path: Path) -> None:
    """``path`` holds this process's own working state inside its roots (the copies' area when the state directory
    lies on another file system): registered, so that every other server hides it, never refused."""
    _STATE.append(path)


def _register(server: Tools) -> None:
    """This server in the user's registry: its state directories hidden from every server's commands, its roots
    known to every server that starts later."""
    writes = server.config.name in ("file_write", "shell_exec") and server.config.mode is not Mode.READ_ONLY
    # The whole state directory its default paths lie in, too: its start-up records, locks and output spools are
    # as much its own (a server with another XDG_STATE_HOME must not show them to its commands).
    whole = [d for d in state_dirs() if any(within(str(p), str(d)) for p in _STATE)]
    # And the state directory wherever the start-up front reads and keeps its records and compiled code there (made
    # now if missing: red team 183 F3, a server whose state paths were all given kept them where no server hid them).
    own = state_dir()
    if own not in whole and not real_within_any(own, [r.path for r in server.jail.allowed]):
        with contextlib.suppress(OSError):
            private_dirs(own)
            whole.append(own)
    registration = registry.register([r.path for r in server.jail.allowed], [*_STATE, *whole], writes=writes)
    if registration is not None:
        server.cleanups.append(registration.close)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


_RELEASE_LOCK = threading.Lock()


def _release(server: Tools, wait: float = -1, *, kills_only: bool = False) -> None:
    """Run what the server registered to end what runs (``kills``: every command, the box), then — unless
    ``kills_only`` — its clean-ups, once each, in order; one that fails does not stop the others. ``wait``: at most
    this long for another thread's run of them (the exit watchdog's, or the orderly exit's), -1 for as long as it
    takes. The forced exit runs the kills only: a clean-up that removes data (the copies of a call whose apply is
    still running) would break what the next start finishes from its journal."""
    if not _RELEASE_LOCK.acquire(timeout=wait):
        return
    try:
        pending = [server.kills] if kills_only else [server.kills, server.cleanups]
        for steps in pending:
            while steps:
                step = steps.pop(0)
                try:
                    step()
                except Exception:
                    logging.getLogger("mcp_server_guard").exception("clean-up at exit failed")
    finally:
        _RELEASE_LOCK.release()


def _terminate(server: Tools, signum: int, _frame: object) -> None:
    # A stop signal outside the event loop (start-up, clean-up), where no call is pending.
    _release(server, deadline.CLEANUP_BOUND_S)
    os._exit(128 + signum)


def message_limit(server: GuardedServer) -> int:
    from mcp_server_guard.serving.stdio import MAX_MESSAGE_BYTES  # noqa: PLC0415 - the SDK, only to serve

    # Any file_write the policy allows fits in one line, even with every byte JSON-escaped (\u00XX).
    return max(MAX_MESSAGE_BYTES, 6 * server.policy.file_write.max_write_bytes + (1 << 20))


def serve(server: GuardedServer) -> None:
    """Run over stdio until the client closes stdin (exit 0) or SIGTERM/SIGHUP (pending calls answered with an
    error, exit 128+N); either way kill whatever commands still run."""

    async def ready() -> GuardedServer:
        return server

    _serve(server.tools, ready)


def _serve(tools: Tools, make: Callable[[], Awaitable[GuardedServer | None]]) -> None:
    """``serve`` the server ``make()`` gives on the loop it runs on (None: the session is over already)."""
    terminate = partial(_terminate, tools)

    for sig in STOP_SIGNALS:
        signal.signal(sig, terminate)
    # Once the session ends (EOF, a stop signal), the process ends within seconds, whatever a call is doing.
    deadline.watch(partial(_release, tools, deadline.CLEANUP_BOUND_S, kills_only=True))

    async def run() -> signal.Signals | None:
        server = await make()
        if server is None:
            return None
        from mcp_server_guard.serving.stdio import serve_stdio  # noqa: PLC0415 - the SDK, only to serve

        return await serve_stdio(server, stop_signals=STOP_SIGNALS, max_message_bytes=message_limit(server))

    import anyio  # noqa: PLC0415 - with asyncio, after the box has begun (issue 44: it starts while they load)

    stopped_by: signal.Signals | None = None
    try:
        stopped_by = anyio.run(run)
    except KeyboardInterrupt:
        pass
    finally:
        for sig in STOP_SIGNALS:  # the event loop's handlers are gone with it
            signal.signal(sig, terminate)
        _release(tools)
        tools.jail.close()
        tools.audit.close()
    if stopped_by is not None:
        raise SystemExit(128 + stopped_by)


def _serve_on_one_loop(tools: Tools) -> None:
    """A server whose calls hold state on the event loop (``Tools.one_loop``): the loop runs from the start and
    serves the calls the start-up front takes before the SDK has loaded, then the real transport on the same loop
    once the SDK is needed (``front.early_calls_on_loop``). A stop signal meanwhile answers the calls under way,
    cancels them and waits for them (bounded) before the exit, as the real transport does."""
    import asyncio  # noqa: PLC0415 - loaded by now (the tool's modules), after the box has begun

    import anyio.to_thread  # noqa: PLC0415

    stopping: list[signal.Signals] = []

    async def stop(signum: signal.Signals) -> None:
        if stopping:
            return  # on the way out already (a second signal answers nothing twice)
        stopping.append(signum)
        running = shutdown_front(f"Server shutting down ({signum.name})")
        if running:
            await asyncio.wait(running, timeout=deadline.CLEANUP_BOUND_S)
        _terminate(tools, signum, None)

    stops: set[asyncio.Task[None]] = set()  # (held: the loop keeps only a weak reference to a task)

    def on_signal(signum: signal.Signals) -> None:
        stops.add(asyncio.get_running_loop().create_task(stop(signum)))

    async def make() -> GuardedServer | None:
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:  # until the real transport puts its own (``serve_stdio``)
            loop.add_signal_handler(sig, on_signal, sig)
        if await early_calls_on_loop(tools):
            deadline.arm(0, "stdin closed")  # the process ends within seconds, whatever a call is doing
            loaded = "mcp.server" in sys.modules  # (the evidence a test reads)
            logging.getLogger("mcp_server_guard").debug(
                "the front answered the whole session; the SDK was %s", "loaded" if loaded else "never loaded"
            )
            return None
        await anyio.to_thread.run_sync(import_sdk)  # the calls under way go on meanwhile
        from mcp_server_guard.serving.server import GuardedServer  # noqa: PLC0415 - the SDK, only now

        return GuardedServer.serving(tools)

    _serve(tools, make)


def run_app(app: typer.Typer, prog: str, argv: Sequence[str] | None = None) -> NoReturn:
    """Invoke a typer app so that any usage error is one line on stderr with exit code 2."""
    import typer  # noqa: PLC0415 - a server's everyday command line is read without it (``options``)

    command = typer.main.get_command(app)
    try:
        returned = command.main(list(argv) if argv is not None else sys.argv[1:], prog_name=prog, standalone_mode=False)
    except (typer.Exit, typer.TyperException, typer.Abort) as exc:
        _typer_exit(prog, exc)
    # Without standalone mode, an Exit raised by a command comes back as its return value.
    raise SystemExit(returned if isinstance(returned, int) else 0)


def _typer_exit(prog: str, exc: BaseException) -> None:
    """How ``run_app`` ends on typer's exceptions (returns on any other)."""
    import typer  # noqa: PLC0415

    if isinstance(exc, typer.Exit):
        raise SystemExit(exc.exit_code) from None
    if isinstance(exc, typer.TyperException):
        if type(exc).__name__ == "NoArgsIsHelpError":  # no command given: the help, as it is laid out
            print(exc.format_message())
            raise SystemExit(0) from None
        usage_error(prog, exc.format_message().replace("\n", " "))
    if isinstance(exc, typer.Abort):
        raise SystemExit(130) from None


def run_read(prog: str, command: Callable[..., Any], arguments: dict[str, Any]) -> NoReturn:
    """``run_app`` for a command line read without typer (``options.fast_arguments``): the command called with what
    typer would give it, and ended as typer's main and ``run_app`` end it (an EOFError or a KeyboardInterrupt exits
    130, a broken pipe 1)."""
    try:
        returned = command(**arguments)
    except EOFError:
        print(file=sys.stderr)
        raise SystemExit(130) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        from typer._click.utils import PacifyFlushWrapper  # noqa: PLC0415 - as typer's main does

        sys.stdout = cast(TextIO, PacifyFlushWrapper(sys.stdout))
        sys.stderr = cast(TextIO, PacifyFlushWrapper(sys.stderr))
        raise SystemExit(1) from None
    except Exception as exc:
        if "typer" in sys.modules:  # (only what imported typer can raise its exceptions)
            _typer_exit(prog, exc)
        raise
    raise SystemExit(returned if isinstance(returned, int) else 0)


def typer_app(command: Callable[..., Any], params: list[inspect.Parameter], doc: str | None) -> typer.Typer:
    """The typer app of a server's command: its parameters' options (``options.option``) as typer's."""
    import typer  # noqa: PLC0415 - not for the everyday command line (``options``)

    typed = [p.replace(annotation=as_typer(p.annotation)) for p in params]
    command.__signature__ = inspect.Signature(typed)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in typed}
    app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)
    app.command(help=doc)(command)
    return app


class ServerMain(Protocol):
    parameters: list[inspect.Parameter]  # the command's: the shared options and the server's own

    def __call__(self, argv: Sequence[str] | None = None) -> None: ...


def server_cli(
    *, prog: str, name: str, distribution: str | None = None, ahead: Callable[..., Callable[[], None]] | None = None
) -> Callable[[Callable[..., GuardedServer | Tools]], ServerMain]:
    """Turn ``build(config, **own_options) -> GuardedServer | Tools`` into a server's ``main(argv)``.

    A server whose ``build`` returns its ``Tools`` (built without the SDK) lets the start-up front answer calls
    with them while the SDK is not loaded (``front.early_calls``); the SDK's server is built around them only when
    the client sends what the front does not answer.

    The shared flags (--allow-path, --symlinks, --mode, --policy, --audit-log, --log-level, --version) are declared
    once, here; a server adds its own options as keyword parameters of ``build`` (typer annotations), and its
    docstring becomes the --help text. ``ahead(options)`` (the values, not yet judged) begins what can go on while
    the configuration is read, and gives what undoes it if the start fails.
    """
    dist = distribution or prog
    kw = inspect.Parameter.KEYWORD_ONLY
    shared = [
        inspect.Parameter("allow_path", kw, annotation=AllowPathOpt, default=None),
        inspect.Parameter("launch_dir", kw, annotation=LaunchDirOpt, default=None),
        inspect.Parameter("symlinks", kw, annotation=SymlinksOpt, default=SymlinkMode.FOLLOW),
        inspect.Parameter("mode", kw, annotation=ModeOpt, default=Mode.WORKSPACE_WRITE),
        inspect.Parameter("policy", kw, annotation=PolicyOpt, default=None),
        inspect.Parameter("audit_log", kw, annotation=AuditLogOpt, default=None),
        inspect.Parameter("log_level", kw, annotation=LogLevelOpt, default=LogLevel.WARNING),
        inspect.Parameter(
            "version",
            kw,
            annotation=Annotated[
                bool,
                option("--version", callback=version_callback(dist, prog), is_eager=True, help="Show the version."),
            ],
            default=False,
        ),
    ]
    shared_names = {p.name for p in shared}

    def decorate(build: Callable[..., GuardedServer | Tools]) -> ServerMain:
        own = [
            p.replace(kind=kw)
            for p in inspect.signature(build, eval_str=True).parameters.values()
            if p.name != "config"
        ]

        def command(**kwargs: Any) -> None:
            values = {k: kwargs.pop(k) for k in list(kwargs) if k in shared_names}
            values.pop("version", None)
            undo = ahead({**values, **kwargs}) if ahead is not None else None
            try:
                config = build_config(prog=prog, name=name, distribution=dist, **values)
                built = build(config, **kwargs)
            except BaseException:
                if undo is not None:
                    undo()
                raise
            if not isinstance(built, Tools):
                early_calls(None)
                _register(built.tools)
                serve(built)
                return
            _register(built)
            if built.one_loop:
                _serve_on_one_loop(built)
                return
            if early_calls(built, STOP_SIGNALS, lambda signum: _terminate(built, signum, None)):
                loaded = "mcp.server" in sys.modules  # (the evidence a test reads)
                logging.getLogger("mcp_server_guard").debug(
                    "the front answered the whole session; the SDK was %s", "loaded" if loaded else "never loaded"
                )
                _release(built)
                built.jail.close()
                built.audit.close()
                return
            import_sdk()
            from mcp_server_guard.serving.server import GuardedServer  # noqa: PLC0415 - the SDK, only now

            serve(GuardedServer.serving(built))

        params = shared + own

        def main(argv: Sequence[str] | None = None) -> None:
            arguments = fast_arguments(params, list(argv) if argv is not None else sys.argv[1:])
            if arguments is None:  # --help, --version, a line typer must judge (or refuse)
                run_app(typer_app(command, params, inspect.getdoc(build)), prog, argv)
            run_read(prog, command, arguments)

        served = cast(ServerMain, main)
        served.parameters = params
        return served

    return decorate
