"""ALBERT's fused form (modules.Albert.fused_on: one stacked query/key/value product, the GELU and residuals in the
products' epilogues): on the CPU the encoder is called fused directly (the model takes it only on a GPU), so the
stacking's split order and the epilogues' placement are checked where CI runs; on CUDA the whole model fused
against unfused, durations exactly and features within the float32-class bound."""
import pytest
import torch

from tests.models.conftest import own_copy
from tests.models.kokoro_reference import random_token_ids, voice_style
from tilewave import precision
from tilewave.spec.tolerance import scaled_max_error, tolerance


def _hidden(model, items: int, tokens: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, model.cfg.n_token, (items, tokens), generator=g)
    x = model.bert.embeddings(ids)
    valid = torch.arange(tokens)[None, :] < torch.randint(tokens // 2, tokens + 1, (items,), generator=g)[:, None]
    return x.to(model.device), valid.to(model.device)


@pytest.mark.parametrize("items,tokens", [(1, 23), (3, 17)])
def test_the_fused_encoder_computes_the_unfused_one(kokoro_cpu, items, tokens):
    x, valid = _hidden(kokoro_cpu, items, tokens, seed=items)
    encoder = kokoro_cpu.bert.encoder
    with torch.no_grad():
        want = encoder(x, valid, fused=False)
        got = encoder(x, valid, fused=True)
    assert torch.isfinite(got).all() and got.shape == want.shape
    assert scaled_max_error(got, want) <= tolerance("float32", "reduction")
    assert want.abs().max() > 0.1  # the comparison sees values


def test_a_wrong_split_would_be_seen(kokoro_cpu):
    """The check above can fail: query and key swapped in the stack change the output past the bound."""
    attn = kokoro_cpu.bert.encoder.albert_layer_groups[0].albert_layers[0].attention
    x, valid = _hidden(kokoro_cpu, 2, 19, seed=7)
    with torch.no_grad():
        x = kokoro_cpu.bert.encoder.embedding_hidden_mapping_in(x)
        want = attn(x, valid, fused=False)
        attn._stacked()
        key, weight, bias = attn._qkv
        H = x.shape[-1]
        swapped = (key, torch.cat([weight[H:2 * H], weight[:H], weight[2 * H:]]),
                   torch.cat([bias[H:2 * H], bias[:H], bias[2 * H:]]))
        attn._qkv = swapped
        try:
            wrong = attn(x, valid, fused=True)
        finally:
            attn._qkv = None
        right = attn(x, valid, fused=True)
    assert scaled_max_error(right, want) <= tolerance("float32", "reduction")
    assert scaled_max_error(wrong, want) > 10 * tolerance("float32", "reduction")


def test_the_stack_follows_its_parameters(kokoro_weights):
    model = own_copy(kokoro_weights)
    attn = model.bert.encoder.albert_layer_groups[0].albert_layers[0].attention
    w1, _ = attn._stacked()
    assert torch.equal(w1[:768], attn.query.weight) and torch.equal(w1[1536:], attn.value.weight)
    with torch.no_grad():
        attn.key.weight.mul_(2.0)  # an in-place change bumps the version counter
    w2, _ = attn._stacked()
    assert torch.equal(w2[768:1536], attn.key.weight) and not torch.equal(w1[768:1536], w2[768:1536])


def test_the_model_runs_fused_only_on_a_gpu_and_off_exact(kokoro_cpu):
    bert = kokoro_cpu.bert
    x = torch.zeros(1, 2, 768)
    saved = bert.fused_on
    try:
        kokoro_cpu.fuse_albert(True)
        with precision.scope("tf32x3"):
            assert not bert.fused(x)  # the CPU: PyTorch's products, unfused
        kokoro_cpu.fuse_albert(False)
        assert not bert.fused(x)
    finally:
        bert.fused_on = saved


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the fused products' kernel needs CUDA")
@pytest.mark.parametrize("mode,dtype", [("tf32x3", torch.float32), ("tf32", torch.float32),
                                        ("tf32x3", torch.bfloat16)])
def test_fused_albert_on_the_gpu_keeps_the_durations(kokoro_weights, mode, dtype):
    from tilewave.models.kokoro.model import KokoroModel

    model = KokoroModel.from_weights(kokoro_weights, "cuda")
    ids = random_token_ids(120, seed=3).cuda()
    style = voice_style(120).cuda()
    outs = {}
    with precision.scope(mode):
        for on in (False, True):
            model.fuse_albert(on)
            outs[on] = model.features(ids, style, 1.0, dtype=dtype)
    model.fuse_albert(False)
    assert torch.equal(outs[True]["durations"][0], outs[False]["durations"][0])
    assert torch.isfinite(outs[True]["bert"]).all()
    assert scaled_max_error(outs[True]["bert"], outs[False]["bert"]) <= tolerance("float32", "reduction")
