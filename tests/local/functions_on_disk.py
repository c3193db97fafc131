"""A template and its function code written to a folder, and `serve` started on it: the emulator's tests of
functions that only they need (slow, failing, oversized)."""

import contextlib
import threading

from chrf_components_local.server import make_server


def function_folder(folder, template, modules):
    """``template`` as folder/template.yaml and each of ``modules`` ({name: source}) in folder/code/: the path of
    the template (its functions' CodeUri is code/)."""
    (folder / "code").mkdir(exist_ok=True)
    for name, source in modules.items():
        (folder / "code" / f"{name}.py").write_text(source, encoding="utf-8")
    (folder / "template.yaml").write_text(template, encoding="utf-8")
    return folder / "template.yaml"


@contextlib.contextmanager
def serving(template_path, **options):
    """`serve` on a free loopback port for this template (make_server's options), stopped after the block."""
    server = make_server("127.0.0.1", 0, template_path, **options)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
