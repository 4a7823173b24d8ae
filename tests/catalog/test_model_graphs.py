"""Graphs built ahead of time, as the Docker image bakes them: read from
``QUIVER_MODEL_GRAPHS_DIR``, never written there, and no process builds any at start
(pods of a cluster share no volume to build them into once)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from embeddings.backends import local_model_path, local_onnx_encoder
from embeddings.onnx_encoder import OnnxMiniLM, model_files


@pytest.fixture(scope="module")
def baked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the image's build step leaves: the command's graphs in a folder."""
    folder = tmp_path_factory.mktemp("baked") / "models"
    out = io.StringIO()
    call_command("build_model_graphs", into=folder, stdout=out)
    assert f"fp32: {folder}" in out.getvalue()
    return folder


def listing(folder: Path) -> dict[str, int]:
    return {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}


def test_the_command_builds_both_graphs_into_the_folder(baked: Path):
    files = model_files(Path(local_model_path()), baked)
    assert all(path.is_file() for path in files.values())
    assert files["int8"].stat().st_size < files["fp32"].stat().st_size


def test_a_process_reads_the_baked_graphs_and_writes_nothing(
    baked: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("QUIVER_MODEL_GRAPHS_DIR", str(baked))
    before = listing(baked)
    encoder = OnnxMiniLM(local_model_path(), tmp_path / "state")
    vector = encoder.encode("weather in Paris")
    assert vector.shape == (384,)
    assert {path.parent for path in encoder.files().values()} == {baked}
    assert listing(baked) == before
    assert not (tmp_path / "state").exists()


def test_the_baked_graphs_give_the_vectors_of_graphs_built_at_start(
    baked: Path, monkeypatch: pytest.MonkeyPatch
):
    built = local_onnx_encoder()
    monkeypatch.setenv("QUIVER_MODEL_GRAPHS_DIR", str(baked))
    prebuilt = OnnxMiniLM(local_model_path(), built.state_dir)
    for precision in ("fp32", "int8"):
        ours = prebuilt.encode("book a flight to Oslo", precision=precision)
        theirs = built.encode("book a flight to Oslo", precision=precision)
        assert float(ours @ theirs) > 0.9999


def test_a_folder_without_these_weights_graphs_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    stale = tmp_path / "baked"
    stale.mkdir()
    (stale / "all-MiniLM-L6-v2-b0-0123456789abcdef-fp32.onnx").write_bytes(b"old")
    monkeypatch.setenv("QUIVER_MODEL_GRAPHS_DIR", str(stale))
    state = local_onnx_encoder().state_dir
    encoder = OnnxMiniLM(local_model_path(), state)
    assert {path.parent for path in encoder.files().values()} == {state / "models"}
    assert [path.name for path in stale.iterdir()] == [
        "all-MiniLM-L6-v2-b0-0123456789abcdef-fp32.onnx"
    ]
