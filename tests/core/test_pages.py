"""Comparing two runs of a page: what a rerun changes by itself is not a difference; anything else is."""

import json

from vlbias.pages import compare, compare_folders


def _page(folder, name, outputs):
    path = folder / "book" / "generated" / f"{name}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    cells = [{"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": "seed = 1",
              "outputs": [{"output_type": "stream", "name": "stdout", "text": "other parameters"}]},
             {"cell_type": "code", "metadata": {}, "source": "x", "outputs": outputs}]
    path.write_text(json.dumps({"cells": cells}))
    return path


def _stream(text):
    return [{"output_type": "stream", "name": "stdout", "text": text}]


def test_folders_durations_and_injected_parameters_are_not_differences(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    first = _page(a, "p", _stream(f"wrote {a}/outputs/x.json in 3.2 s\n"))
    second = _page(b, "p", _stream(f"wrote {b}/outputs/x.json in 41 s\n"))
    assert compare(first, second) == []
    # a folder outside the project is the same only when named as a root
    third = _page(tmp_path / "c", "p", _stream(f"wrote {tmp_path}/cache-1/x.json in 3.2 s\n"))
    fourth = _page(tmp_path / "d", "p", _stream(f"wrote {tmp_path}/cache-2/x.json in 3.2 s\n"))
    assert compare(third, fourth) != []
    assert compare(third, fourth, roots=(str(tmp_path / "cache-1"), str(tmp_path / "cache-2"))) == []


def test_a_changed_number_figure_or_missing_page_is_a_difference(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _page(a, "p", _stream("gap 1.25 points\n"))
    _page(b, "p", _stream("gap 1.26 points\n"))
    _page(a, "q", [{"output_type": "display_data", "data": {"image/png": "AAAA"}, "metadata": {}}])
    _page(b, "q", [{"output_type": "display_data", "data": {"image/png": "AAAB"}, "metadata": {}}])
    _page(a, "r", _stream("only here\n"))
    found = compare_folders(a / "book" / "generated", b / "book" / "generated")
    assert "1.25" in found["p.ipynb"][0] and "image/png" in found["q.ipynb"][0]
    assert found["r.ipynb"] == ["only in A"]


def test_one_stream_split_into_pieces_by_the_kernel_is_the_same_output(tmp_path):
    whole = _page(tmp_path / "a", "p", _stream("first line\nsecond line\n"))
    pieces = _page(tmp_path / "b", "p", _stream("first line\n") + _stream("second line\n"))
    assert compare(whole, pieces) == []
    # different text, or a stream on stderr between the pieces, still differs
    other = _page(tmp_path / "c", "p", _stream("first line\n") + _stream("third line\n"))
    assert compare(whole, other) != []
    between = _page(tmp_path / "d", "p", _stream("first line\n")
                    + [{"output_type": "stream", "name": "stderr", "text": "warning\n"}] + _stream("second line\n"))
    assert compare(whole, between) != []
