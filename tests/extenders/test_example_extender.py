"""examples/extender: the sample extender server drives `kubesched simulate` as documented."""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path

import pytest

from kubesched.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "extender"


def test_example_extender_filters_and_prioritizes_in_simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("label_extender", EXAMPLE / "label_extender.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.serve(0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        config = (EXAMPLE / "scheduler-config.yaml").read_text().replace(":8888/", f":{port}/")
        (tmp_path / "config.yaml").write_text(config)
        argv = ["simulate", str(EXAMPLE / "cluster.yaml"), "--config", str(tmp_path / "config.yaml")]
        assert main([*argv, "-o", "json", "--explain"]) == 0
    finally:
        server.shutdown()
        server.server_close()
    (api,) = json.loads(capsys.readouterr().out)["pods"]
    # zone-b-1 is the fastest node, but outside the allowed zones; zone-a-2 is faster than zone-a-1.
    assert api["node"] == "zone-a-2"
    url = f"http://127.0.0.1:{port}/scheduler"
    assert api["filter"]["zone-b-1"][url] == "node(s) are outside the allowed zones"
    assert api["finalScore"]["zone-a-2"][url] == 9 * 5 * 10
