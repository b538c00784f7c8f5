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


def test_a_second_server_on_a_data_dir_in_use_is_refused_in_one_line(tmp_path, capsys):
    from kubesched.cli import EXIT_RUN_FAILED
    from kubesched.store.sqlite import SqliteStore

    data = tmp_path / "d"
    data.mkdir()
    running = SqliteStore(data / "cluster.db")  # what a serve running on the directory holds
    try:
        running.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "held"}})
        code = main(["serve", "--nodes", "1", "--data-dir", str(data), "--port", "0"])
    finally:
        running.close()
    err = capsys.readouterr().err
    assert code == EXIT_RUN_FAILED
    assert "in use by another process" in err and str(data) in err
    assert "Traceback" not in err
    # The first server's data is untouched and opens again once it has stopped.
    reopened = SqliteStore(data / "cluster.db")
    try:
        assert reopened.get("Namespace", None, "held") is not None
    finally:
        reopened.close()
