"""The interpreter behind chatd's bundled `python` tool: one CPython per session, built with
componentize-py against chatd's WIT (world `tool`) and pre-initialised at build time with the
bundled packages imported, so a new session starts from a snapshot rather than from scratch.

The host (host/src/tools/python/) keeps this component's instance alive for a session and calls
`invoke` once per tool call; globals set by one call are there for the next. The code's current
directory is /mnt/data, the session's folder (the host's in-memory `files` capability); nothing
else is on the filesystem, and there are no sockets, processes or threads.

What `invoke` returns is JSON for the host, not for the model (the value's repr and the
exception's traceback): the host adds what the code printed (kept by the host as it is written),
the files written, the duration and the memory peak, and decides what the model sees
(host/src/tools/python/result.rs).
"""

import ast
import gc
import json
import sys
import traceback
import types as _types

# sympy reads the size of a C long from ctypes, which WASI's CPython lacks (no _ctypes). A
# stand-in answers that one question while the packages are imported and is removed at once,
# so the model's `import ctypes` still fails as it should.
_stand_in = _types.ModuleType("ctypes")
_stand_in.c_long = object()
_stand_in.sizeof = lambda _type: 4  # wasm32: a C long is 32 bits
sys.modules["ctypes"] = _stand_in
import mpmath  # noqa: E402
import pygal  # noqa: E402
import sympy  # noqa: E402

del sys.modules["ctypes"]


def _pygal_stylesheets_in_memory():
    """pygal reads its stylesheets from its package folder when it renders, and no package file
    is in the sandbox at run time: they are read now, at build time, and pygal's renderer gets
    an `io` that answers them from memory (any other path goes to the real `io.open`)."""
    import io
    import os

    import pygal.svg

    folder = os.path.join(os.path.dirname(pygal.svg.__file__), "css")
    texts = {}
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            texts[name] = f.read()

    class StylesheetsIO:
        def __getattr__(self, name):
            return getattr(io, name)

        @staticmethod
        def open(path, *args, **kwargs):
            if os.path.dirname(path) == folder and os.path.basename(path) in texts:
                return io.StringIO(texts[os.path.basename(path)])
            return io.open(path, *args, **kwargs)

    pygal.svg.io = StylesheetsIO()


_pygal_stylesheets_in_memory()

# Only modules imported here are in the snapshot: the standard library's files are not in the
# sandbox at run time, so what is not imported now cannot be imported later. Everything that
# imports is, but for what has no use without a terminal, a GUI, a network or processes.
NOT_PRELOADED = {
    "antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test", "ensurepip",
    "venv", "lib2to3", "pydoc", "pydoc_data", "webbrowser", "curses", "readline", "getpass",
    "pty", "tty", "ftplib", "poplib", "imaplib", "smtplib", "nntplib", "telnetlib",
    "socketserver", "xmlrpc", "http", "urllib", "wsgiref", "mailbox", "multiprocessing",
    "concurrent", "subprocess", "asyncio", "ctypes", "sqlite3", "dbm", "msvcrt", "winreg",
    "winsound", "_winapi", "nt", "posix", "pwd", "grp", "syslog", "resource", "fcntl", "termios",
    "mmap", "select", "selectors", "ssl", "socket", "signal", "__phello__", "_pyrepl",
}
for _name in sorted(sys.stdlib_module_names - NOT_PRELOADED):
    if _name.startswith("_"):
        continue
    try:
        __import__(_name)
    except Exception:  # noqa: BLE001 - a module WASI's CPython lacks is simply not offered
        pass
for _name in ("collections.abc", "xml.etree.ElementTree", "email.message", "json.decoder"):
    try:
        __import__(_name)
    except Exception:  # noqa: BLE001
        pass

import wit_world  # noqa: E402
from componentize_py_types import Err  # noqa: E402
from wit_world.imports import config, tool_types, types  # noqa: E402


def _too_many_open_files():
    """Opening a file past what the session may hold open is the ordinary EMFILE ("Too many
    open files"). WASI's preview-1 adapter, which CPython's descriptors go through, answers
    ENOMEM when its table of descriptors is full, and the host's folder answers the same when
    the session's resources are (never ending the session: host/src/plugins/capabilities/
    files/host.rs); code that handles EMFILE expects EMFILE."""
    import builtins
    import errno
    import functools
    import io
    import os

    def emfile(opener):
        @functools.wraps(opener)
        def opened(*args, **kwargs):
            try:
                return opener(*args, **kwargs)
            except OSError as e:
                if e.errno != errno.ENOMEM:
                    raise
                name = args[0] if args and isinstance(args[0], (str, bytes, os.PathLike)) else None
                raise OSError(errno.EMFILE, "Too many open files", name) from None

        return opened

    builtins.open = io.open = emfile(io.open)
    os.open = emfile(os.open)


_too_many_open_files()

# The snapshot's objects are never collected: freezing them keeps the collector from writing to
# (and so copying) the shared image's pages in every session.
gc.collect()
gc.freeze()

SCHEMA = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "Python source to run; the value of a final expression is returned",
        }
    },
    "required": ["code"],
    "additionalProperties": False,
}

# What one stream keeps of a call's output, in characters, unless the host's setting says
# otherwise (python_output_chars): the host keeps it, as the code writes (the description says
# so; nothing here enforces it).
OUTPUT_CHARS = 20_000
# The longest repr of the final value, and the longest traceback, in characters; the host cuts
# both again (host/src/tools/python/result.rs), so this only spares it the work.
VALUE_CHARS = 20_000
# The longest source accepted, in characters.
MAX_SOURCE_CHARS = 100_000
WORKDIR = "/mnt/data"


def cut(text, limit):
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more)"


def invalid(message):
    return Err(types.PluginError_InvalidInput(message))


class Session:
    """What one instance keeps between calls: the code's globals, and its stdout and stderr.

    What the code prints goes to the instance's own stdout and stderr (file descriptors 1 and
    2), which the host keeps up to its cap per call and counts past it: `print`,
    `sys.stdout.write` and `os.write(1, ...)` are one stream, and nothing the code does here
    changes what the host keeps."""

    def __init__(self):
        import os
        import random

        os.chdir(WORKDIR)
        # What the build's environment left (PYTHONPATH and the like); the host gives none.
        os.environ.clear()
        # The snapshot's generator state is the same in every session: seeded again from the
        # host's randomness, which is fresh per session.
        random.seed()
        self.globals = {"__name__": "__main__", "__builtins__": __builtins__}
        self.streams = {"stdout": self.opened(1), "stderr": self.opened(2)}

    @staticmethod
    def opened(fd):
        """The session's stream on `fd`. Buffered, because the host takes a large write in part
        and CPython's own unbuffered streams drop what a partial write left (a buffered writer
        writes the rest); flushed at each line, and by `restore_streams` at each call's end, so
        the host counts what was printed as it is printed. Text that UTF-8 cannot carry (a lone
        surrogate) is escaped rather than raised."""
        stream = open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        stream.reconfigure(line_buffering=True)
        return stream

    def restore_streams(self):
        """Writes out what the code printed, and puts the session's streams back in `sys`
        (the code may have replaced or closed them)."""
        for name, fd in (("stdout", 1), ("stderr", 2)):
            stream = self.streams[name]
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - closed, or unwritable text; the call goes on
                pass
            if stream.closed:
                stream = self.streams[name] = self.opened(fd)
            setattr(sys, name, stream)
            setattr(sys, f"__{name}__", stream)

    def run(self, source):
        value, error = None, None
        self.restore_streams()
        try:
            tree = ast.parse(source, "<code>", "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, "<code>", "exec"), self.globals)
            if last is not None:
                result = eval(compile(last, "<code>", "eval"), self.globals)
                if result is not None:
                    value = cut(repr(result), VALUE_CHARS)
        except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
            error = cut(format_exception(e), VALUE_CHARS)
        finally:
            self.restore_streams()
        return {"value": value, "error": error}


def format_exception(e):
    """The traceback from the model's code down, without this file's frames, and what the
    sandbox has to do with it when it does."""
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != "<code>":
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(e), e, tb)).rstrip()
    if isinstance(e, MemoryError):
        memory = setting("python_memory_mib", 256)
        text += f"\n(The session's memory is limited to {memory} MiB.)"
    elif isinstance(e, ModuleNotFoundError) and e.name:
        text += (
            f"\n(Only the standard library, sympy, mpmath and pygal are available; {e.name} "
            "is not, and nothing can be installed. Modules for processes, sockets, threads "
            "and C libraries do not work here.)"
        )
    return text


_session = None


def setting(key, default):
    """One of the operator's limits, as the host grants them (`grants.config`)."""
    value = config.get(key)
    return int(value) if value is not None and value.isdigit() else default


def description():
    """What the model is told: what runs, what it can reach, what persists, the limits."""
    timeout = setting("python_timeout_ms", 30_000) / 1000
    return (
        f"Runs Python {sys.version_info.major}.{sys.version_info.minor} code in chatd's sandbox "
        "(CPython compiled to WebAssembly, on the server) and returns what it printed (stdout, "
        "stderr), the repr of the value of its last expression, and the files it wrote. "
        "Packages: the standard library, sympy and mpmath (exact and arbitrary-precision math), "
        "pygal (charts: write them as SVG files, e.g. chart.render_to_file('chart.svg')). "
        "There is no network, no subprocess, no threads, no package installation, no ctypes. "
        f"The working directory ({WORKDIR}) holds this conversation's attached files and the "
        "files earlier calls wrote; files written there are kept and shown to the user. "
        "Variables and imports persist between calls of this conversation while its session "
        f"lives (it ends after {setting('python_idle_minutes', 20)} idle minutes, or earlier "
        "under load): if a name is suddenly undefined, the session was restarted, so run the "
        "setup again; files persist. Limits per call: "
        f"{timeout:g} s, {setting('python_memory_mib', 256)} MiB of memory, "
        f"{setting('python_output_chars', OUTPUT_CHARS)} characters each of stdout and stderr, "
        f"{setting('python_max_files_per_call', 20)} new files of at most "
        f"{setting('python_max_file_mib', 10)} MiB each."
    )


class WitWorld(wit_world.WitWorld):
    def describe(self):
        return [
            types.ToolSpec(
                name="python",
                description=description(),
                parameters_schema_json=json.dumps(SCHEMA),
            )
        ]

    def invoke(self, name, arguments_json):
        global _session
        if name != "python":
            raise invalid(f"unknown tool {name}")
        try:
            arguments = json.loads(arguments_json)
        except ValueError as e:
            raise invalid(f"the arguments are not JSON: {e}")
        code = arguments.get("code") if isinstance(arguments, dict) else None
        if not isinstance(code, str):
            raise invalid("code: must be a string of Python source")
        if len(code) > MAX_SOURCE_CHARS:
            raise invalid(f"code: at most {MAX_SOURCE_CHARS} characters, got {len(code)}")
        if _session is None:
            _session = Session()
        return tool_types.ToolOutput(content=json.dumps(_session.run(code)), summary=None)
