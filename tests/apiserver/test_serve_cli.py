"""``kubesched serve`` refuses bad flags and files before starting anything."""

from __future__ import annotations

from kubesched.cli import EXIT_BAD_INPUT, main


def test_bad_flags_and_files_exit_2(tmp_path, capsys):
    assert main(["serve", "--nodes", "-1", "--data-dir", str(tmp_path / "d")]) == EXIT_BAD_INPUT
    bad = tmp_path / "ksc.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: 3\n"
    )
    assert main(["serve", "--config", str(bad), "--data-dir", str(tmp_path / "d")]) == EXIT_BAD_INPUT
    assert (
        main(["serve", str(tmp_path / "missing.yaml"), "--data-dir", str(tmp_path / "d")]) == EXIT_BAD_INPUT
    )
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "d" / "cluster.db").exists()
