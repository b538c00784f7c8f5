"""Policy comparison: repeated --config, sweep files, side-by-side output and one report for all runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, main
from kubesched.errors import InputError
from kubesched.plugins import default_registry
from kubesched.sim.compare import apply_variant, load_sweep, plan_runs

from .test_metrics import node, pod

API = "kubescheduler.config.k8s.io/v1"


def strategy_config(kind: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": kind}}}],
            }
        ],
    }


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """A cluster where spreading and packing differ: two 4-CPU nodes, two 1-CPU pods."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([node("n1", "4"), node("n2", "4"), pod("p1", "1"), pod("p2", "1")]))
    least = tmp_path / "least.yaml"
    least.write_text(yaml.safe_dump(strategy_config("LeastAllocated")))
    most = tmp_path / "most.yaml"
    most.write_text(yaml.safe_dump(strategy_config("MostAllocated")))
    return {"cluster": str(cluster), "least": str(least), "most": str(most)}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_two_configs_give_two_labelled_json_documents(capsys, files: dict[str, str]) -> None:
    code, out, err = run_cli(
        capsys, files["cluster"], "--config", files["least"], "--config", files["most"], "-o", "json"
    )
    assert code == EXIT_OK, err
    docs = [json.loads(line) for line in out.splitlines()]
    assert [d["run"] for d in docs] == ["least.yaml", "most.yaml"]
    assert [d["config"] for d in docs] == [files["least"], files["most"]]
    nodes = [{p["name"]: p["node"] for p in d["pods"]} for d in docs]
    assert len(set(nodes[0].values())) == 2  # LeastAllocated spreads
    assert len(set(nodes[1].values())) == 1  # MostAllocated packs
    assert all(d["metrics"]["scheduled"] == 2 for d in docs)


def test_two_configs_table_and_report(capsys, tmp_path: Path, files: dict[str, str]) -> None:
    out_dir = tmp_path / "r"
    code, out, err = run_cli(
        capsys,
        files["cluster"],
        "--config",
        files["least"],
        "--config",
        files["most"],
        "--report",
        str(out_dir),
    )
    assert code == EXIT_OK, err
    assert "policy comparison" in out
    header = next(line for line in out.splitlines() if "METRIC" in line)
    assert "least.yaml" in header and "most.yaml" in header
    page = (out_dir / "report.html").read_text()
    assert "<th>least.yaml</th><th>most.yaml</th>" in page
    assert "MostAllocated" in page and "LeastAllocated" in page  # both configs shown
    assert len(re.findall(r'<img alt="allocation.png" src="data:image/png;base64,', page)) == 1
    runs = {line.split(",")[0] for line in (out_dir / "timeseries.csv").read_text().splitlines()[1:]}
    assert runs == {"least.yaml", "most.yaml"}


def test_yaml_output_has_one_document_per_run(capsys, files: dict[str, str]) -> None:
    code, out, _ = run_cli(
        capsys, files["cluster"], "--config", files["least"], "--config", files["most"], "-o", "yaml"
    )
    assert code == EXIT_OK
    assert [d["run"] for d in yaml.safe_load_all(out)] == ["least.yaml", "most.yaml"]


def test_sweep_file_configs_and_variants(capsys, tmp_path: Path, files: dict[str, str]) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "configs": ["least.yaml"],
                "variants": [
                    {"name": "packed", "scoringStrategy": "MostAllocated"},
                    {"name": "pct50", "percentageOfNodesToScore": 50},
                ],
            }
        )
    )
    code, out, err = run_cli(capsys, files["cluster"], "--sweep", str(sweep), "-o", "json")
    assert code == EXIT_OK, err
    docs = [json.loads(line) for line in out.splitlines()]
    assert [d["run"] for d in docs] == ["least.yaml", "packed", "pct50"]
    assert len({p["node"] for p in docs[1]["pods"]}) == 1
    assert "variants[0]" in docs[1]["config"]


def test_variants_apply_to_the_base_config(files: dict[str, str]) -> None:
    registry = default_registry()
    runs = plan_runs([files["most"]], None, registry)
    assert [r.label for r in runs] == ["most.yaml"]
    base = yaml.safe_load(Path(files["most"]).read_text())
    changed = apply_variant(base, {"scoringStrategy": "LeastAllocated", "percentageOfNodesToScore": 20})
    assert changed["percentageOfNodesToScore"] == 20
    assert changed["profiles"][0]["pluginConfig"][0]["args"]["scoringStrategy"] == {"type": "LeastAllocated"}
    assert base["profiles"][0]["pluginConfig"][0]["args"]["scoringStrategy"] == {"type": "MostAllocated"}
    fresh = apply_variant(None, {"scoringStrategy": "MostAllocated"})
    assert fresh["profiles"] == [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
            ],
        }
    ]


def test_same_config_twice_gets_distinct_labels(files: dict[str, str]) -> None:
    runs = plan_runs([files["most"], files["most"]], None, default_registry())
    assert [r.label for r in runs] == ["most.yaml", "most.yaml#2"]


def test_default_run_without_configs() -> None:
    (run,) = plan_runs([], None, default_registry())
    assert run.label == "default" and run.config is None


@pytest.mark.parametrize(
    ("sweep", "field"),
    [
        ({"config": ["a.yaml"]}, "config"),
        ({"configs": ["missing.yaml"]}, "configs[0]"),
        ({"variants": [{"scoringStrategy": "MostAllocated"}]}, "variants[0].name"),
        ({"variants": [{"name": "x", "strategy": "MostAllocated"}]}, "variants[0].strategy"),
        ({"variants": [{"name": "x"}]}, "variants[0]"),
        ({"variants": [{"name": "x", "scoringStrategy": "Fastest"}]}, "scoringStrategy.type"),
        ({"variants": [{"name": "x", "percentageOfNodesToScore": 101}]}, "percentageOfNodesToScore"),
    ],
)
def test_bad_sweep_names_the_field(tmp_path: Path, sweep: dict[str, Any], field: str) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    with pytest.raises(InputError) as err:
        load_sweep(path, default_registry())
    assert field in str(err.value)
    assert str(path) in str(err.value)


def test_bad_sweep_exits_2(capsys, tmp_path: Path, files: dict[str, str]) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("variants: {}\n")
    code, _, err = run_cli(capsys, files["cluster"], "--sweep", str(path))
    assert code == EXIT_BAD_INPUT
    assert "variants" in err
