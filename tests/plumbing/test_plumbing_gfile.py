"""gfile / io.gfile on local paths, with TF's error types."""
import pytest

import gradflow as gf


def test_file_round_trip_and_directory_operations(tmp_path):
    base = str(tmp_path / "a" / "b")
    gf.gfile.MakeDirs(base)
    gf.gfile.MakeDirs(base)  # existing: fine
    assert gf.gfile.IsDirectory(base) and gf.io.gfile.isdir(base)
    path = base + "/f.txt"
    with gf.gfile.GFile(path, "w") as f:
        f.write("one\ntwo\n")
    with gf.gfile.Open(path) as f:
        assert list(f) == ["one\n", "two\n"]
    with gf.gfile.FastGFile(path, "rb") as f:
        assert f.read() == b"one\ntwo\n" and f.size() == 8
    assert gf.gfile.Exists(path) and gf.io.gfile.exists(path)
    gf.gfile.Copy(path, base + "/g.txt")
    with pytest.raises(gf.errors.AlreadyExistsError):
        gf.gfile.Copy(path, base + "/g.txt")
    gf.gfile.Rename(base + "/g.txt", base + "/h.txt")
    assert gf.gfile.ListDirectory(base) == ["f.txt", "h.txt"]
    assert gf.gfile.Glob(base + "/*.txt") == [base + "/f.txt", base + "/h.txt"]
    assert gf.gfile.Stat(path).length == 8 and not gf.gfile.Stat(path).is_directory
    walked = {top: (sorted(dirs), sorted(files)) for top, dirs, files in
              gf.gfile.Walk(str(tmp_path))}
    assert walked == {str(tmp_path): (["a"], []), str(tmp_path / "a"): (["b"], []),
                      base: ([], ["f.txt", "h.txt"])}
    assert next(iter(gf.gfile.Walk(str(tmp_path), in_order=False)))[0] == base
    gf.gfile.Remove(base + "/h.txt")
    gf.gfile.MkDir(base + "/c")
    with pytest.raises(gf.errors.AlreadyExistsError):
        gf.gfile.MkDir(base + "/c")
    gf.gfile.DeleteRecursively(str(tmp_path / "a"))
    assert not gf.gfile.Exists(base)


def test_missing_paths_raise_tf_errors(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(gf.errors.NotFoundError):
        gf.gfile.GFile(missing)
    with pytest.raises(gf.errors.NotFoundError):
        gf.gfile.ListDirectory(missing)
    with pytest.raises(gf.errors.NotFoundError):
        gf.gfile.Remove(missing)
    with pytest.raises(gf.errors.NotFoundError):
        gf.gfile.DeleteRecursively(missing)
    with pytest.raises(gf.errors.UnimplementedError, match="gs"):
        gf.gfile.Exists("gs://bucket/x")
    with pytest.raises(ValueError, match="mode must be one of"):
        gf.gfile.GFile(missing, "x")
