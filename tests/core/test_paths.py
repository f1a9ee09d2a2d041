"""``staged_directory``, the one "build in a temporary folder, then rename" of the package: a failed or
killed build leaves no half-built target, a stale target is replaced, and of two builders the first to
finish wins."""

import pathlib
import signal
import subprocess
import sys
import textwrap

import pytest

from vlbias.paths import staged_directory


def build(staging, content):
    (staging / "part-1").write_text(content)
    (staging / "done").write_text(content)


def finished(directory):
    return (directory / "done").is_file()


def test_a_finished_block_moves_the_build_into_place_and_leaves_no_staging(tmp_path):
    target = tmp_path / "sub" / "model"
    with staged_directory(target, prefix=".model-") as staging:
        assert staging.parent == target.parent and staging.name.startswith(".model-")
        assert not target.exists()  # nothing at the target until the block ends
        build(staging, "ours")
    assert (target / "done").read_text() == "ours"
    assert sorted(p.name for p in target.parent.iterdir()) == ["model"]


def test_an_exception_leaves_the_target_as_it_was_and_removes_the_staging(tmp_path):
    target = tmp_path / "model"
    with pytest.raises(RuntimeError, match="half way"):
        with staged_directory(target) as staging:
            (staging / "part-1").write_text("half")
            raise RuntimeError("half way")
    assert list(tmp_path.iterdir()) == []


def test_a_killed_builder_leaves_only_its_hidden_staging_folder(tmp_path):
    target = tmp_path / "model"
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from vlbias.paths import staged_directory
        with staged_directory(Path({str(target)!r}), prefix=".model-") as staging:
            (staging / "part-1").write_text("half")
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert not target.exists()
    leftovers = list(tmp_path.iterdir())
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".model-")


def test_a_stale_target_is_replaced(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    (target / "old-version").write_text("stale")
    with staged_directory(target, complete=finished) as staging:
        build(staging, "ours")
    assert sorted(p.name for p in target.iterdir()) == ["done", "part-1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # the stale copy moved aside is gone


def test_a_builder_that_finishes_first_wins(tmp_path):
    target = tmp_path / "model"
    with staged_directory(target, complete=finished) as ours:
        build(ours, "ours")
        with staged_directory(target, complete=finished) as theirs:  # starts later, finishes first
            build(theirs, "theirs")
        assert (target / "done").read_text() == "theirs"
    assert (target / "done").read_text() == "theirs"  # kept: readers may already be reading it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_builder_that_renames_first_in_a_race_wins(tmp_path, monkeypatch):
    """The other builder's rename lands between our check and our rename: ours fails and theirs stays."""
    target = tmp_path / "model"
    real_rename = pathlib.Path.rename

    def rename_after_theirs(self, destination):
        if pathlib.Path(destination) == target and not target.exists():
            theirs = tmp_path / ".theirs"
            theirs.mkdir()
            build(theirs, "theirs")
            real_rename(theirs, target)
        return real_rename(self, destination)

    with staged_directory(target, complete=finished) as staging:
        build(staging, "ours")
        monkeypatch.setattr(pathlib.Path, "rename", rename_after_theirs)
    assert (target / "done").read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_failed_rename_without_a_finished_target_is_raised(tmp_path, monkeypatch):
    target = tmp_path / "model"

    def refuse(self, destination):
        raise PermissionError(f"cannot rename {self} to {destination}")

    with pytest.raises(PermissionError, match="cannot rename"):
        with staged_directory(target, complete=finished) as staging:
            build(staging, "ours")
            monkeypatch.setattr(pathlib.Path, "rename", refuse)
    monkeypatch.undo()
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_build_once_builds_into_place_once_and_a_failed_build_leaves_nothing(tmp_path):
    from vlbias.paths import build_once

    calls = []

    def build(staging):
        calls.append(staging)
        assert staging != tmp_path / "model" and staging.parent == tmp_path  # a staged sibling, not the target
        (staging / "weights").write_text("w")
        (staging / "training.json").write_text("{}")

    target = build_once(tmp_path / "model", build, ".model-")
    assert target == tmp_path / "model" and (target / "weights").read_text() == "w"
    assert build_once(tmp_path / "model", build, ".model-") == target and len(calls) == 1  # complete: not rebuilt

    def broken(staging):
        (staging / "weights").write_text("half")
        raise RuntimeError("killed mid-build")

    with pytest.raises(RuntimeError, match="killed mid-build"):
        build_once(tmp_path / "other", broken, ".other-")
    assert not (tmp_path / "other").exists() and not list(tmp_path.glob(".other-*"))
    # another completeness marker (a world writes world.json); no training.json needed
    world = build_once(tmp_path / "world", lambda staging: (staging / "world.json").write_text("{}"),
                       complete=lambda directory: (directory / "world.json").exists())
    assert (world / "world.json").exists()
