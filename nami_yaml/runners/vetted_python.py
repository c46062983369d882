"""Run by nami inside a project's Python MCP server, as
``python [its options] -c <this file's text> MANIFEST script|module|code TARGET ARGS...``, so that the server
imports from its code folders only what trust saw, byte for byte (as runners/import_guard.py does for
entry points in nami's own process).

MANIFEST (written by nami, read once here) names the server's code folders and the SHA-256 of each code
file trust covers in them. A module found in one of those folders is imported only if its bytes are those
hashes: a file trust does not cover (in ``node_modules``, behind a folder link, added since) or one
changed since trusting raises ImportError before any of its code runs. Sources are compiled from the bytes
checked, never from ``__pycache__``, and no bytecode is written into the project. Everything else
(the standard library, site-packages) imports as usual.

The server's interpreter may not be nami's: this file uses the standard library only and runs on
Python 3.8 and later. It is never imported by nami.
"""

import hashlib
import importlib.abc
import importlib.machinery
import json
import os
import runpy
import sys
import types


def _main():
    manifest, mode, target = sys.argv[1:4]
    rest = sys.argv[4:]
    with open(manifest, encoding="utf-8") as handle:
        data = json.load(handle)
    folders = [os.path.normpath(folder) for folder in data["folders"]]
    hashes = {os.path.normpath(path): digest for path, digest in data["files"].items()}
    project = data["project"]
    sys.dont_write_bytecode = True

    def watched(path):
        path = os.path.normpath(path)
        return any(path == folder or path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)

    def vetted(path):
        key = os.path.normpath(path)
        expected = hashes.get(key)
        if expected is None:
            raise ImportError(f"nami: {path} is not covered by the trust given to {project} (it is in a folder trust "
                              "skips, behind a folder link, or new); it is not imported")
        with open(path, "rb") as handle:
            content = handle.read()
        if hashlib.sha256(content).hexdigest() != expected:
            raise ImportError(f"nami: {path} changed since {project} was trusted; it is not imported until it is "
                              "trusted again (nami trust)")
        return content

    class VettedLoader(importlib.machinery.SourceFileLoader):
        def get_code(self, fullname):
            path = self.get_filename(fullname)
            return compile(vetted(path), path, "exec", dont_inherit=True)

        def set_data(self, path, data, *, _mode=0o666):
            return None

    class Guard(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
            if spec is None or not spec.has_location or not spec.origin or not watched(spec.origin):
                return None
            if isinstance(spec.loader, importlib.machinery.SourceFileLoader):
                spec.loader = VettedLoader(fullname, spec.origin)
                spec.cached = None
            else:
                vetted(spec.origin)  # compiled code: its bytes are checked as it is found
            return spec

    sys.meta_path.insert(0, Guard())
    if mode == "module":
        sys.argv = [target, *rest]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
        return
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    if mode == "code":  # the code is agent.yaml's own text, trusted with it; what it imports is vetted
        sys.argv = ["-c", *rest]
        code = compile(target, "<string>", "exec", dont_inherit=True)
    else:
        script = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(target))), os.path.basename(target))
        try:
            if watched(script):
                source = vetted(script)
            else:  # a script elsewhere (installed): only what it imports from the code folders is vetted
                with open(script, "rb") as handle:
                    source = handle.read()
        except (ImportError, OSError) as exc:
            sys.stderr.write(f"{exc}\n")
            raise SystemExit(1) from None
        safe_path = getattr(sys.flags, "safe_path", False) or sys.flags.isolated  # -P, -I: nothing prepended
        if not safe_path and sys.path and sys.path[0] == "":
            sys.path[0] = os.path.dirname(os.path.realpath(script))  # as `python script.py` would
        main.__file__ = os.path.abspath(target)
        sys.argv = [target, *rest]
        code = compile(source, main.__file__, "exec", dont_inherit=True)
    sys.modules["__main__"] = main
    exec(code, main.__dict__)

_main()
