"""Which of Kokoro's conv stages tolerate bfloat16: the model's bfloat16 decoder swapped for variants that cast
the convs of the decoder, of the generator, or of both with conv_post too, each against exact float32 on 4 of
benchmarks/fidelity_inputs.json (CPU, PyTorch path). A one-off: its result is in benchmarks/RESULTS.md, the
script is kept only in the commit that RESULTS.md cites.   PYTHONPATH=. python benchmarks/kokoro_bf16_stages.py
"""
import json, time, torch
from tilewave.engine.voices import load_voice, style_for
from tilewave.models.kokoro import KokoroModel
from tilewave.models.kokoro.modules import Conv1d, ConvTranspose1d, Decoder
from tilewave.spec.tolerance import log_spectral_distance, scaled_max_error
from tilewave.text import encode
torch.set_num_threads(2)
BF = torch.bfloat16
model = KokoroModel.from_pretrained(device="cpu")
ph = json.load(open("benchmarks/fidelity_inputs.json"))
names = ["library", "weather", "boats", "thunder"]
pack = load_voice("af_heart")
items = [(encode(ph[n]), style_for(pack, len(ph[n])).reshape(1, -1)) for n in names]

def make(pred, post_bf16=False):
    post = model.decoder.generator.conv_post
    cast = {f"{name}.{p}" for name, m in model.decoder.named_modules()
            if isinstance(m, (Conv1d, ConvTranspose1d)) and (m is not post or post_bf16) and pred(name)
            for p, _ in m.named_parameters(recurse=False)}
    with torch.device("meta"):
        d = Decoder(model.cfg)
    d.load_state_dict({k: v.to(BF) if k in cast else v for k, v in model.decoder.state_dict().items()}, assign=True)
    if post_bf16:
        p = d.generator.conv_post
        orig = p.forward
        p.forward = lambda x, l=None: orig(x, l).float()
    return d.eval().requires_grad_(False)

def run(dtype, seed=0):
    outs, t = [], 0.0
    for ids, s in items:
        t0 = time.perf_counter()
        o = model(ids, s, generator=torch.Generator().manual_seed(seed), dtype=dtype)
        t += time.perf_counter() - t0
        outs.append((o.durations, o.audio))
    return outs, t

ref, tref = run(torch.float32)
def report(label, outs, t):
    lsd = [log_spectral_distance(a, ra) if a.shape == ra.shape else float("nan") for (_, a), (_, ra) in zip(outs, ref)]
    err = [scaled_max_error(a, ra) if a.shape == ra.shape else float("nan") for (_, a), (_, ra) in zip(outs, ref)]
    same = sum(torch.equal(d, rd) for (d, _), (rd, _) in zip(outs, ref))
    print(f"{label:<40} dur {same}/{len(ref)} LSD mean {sum(lsd)/len(lsd):.4f} max {max(lsd):.4f} "
          f"maxerr {max(err):.2e} time {t:.1f}s", flush=True)
report("float32 reference", ref, tref)
report("float32 seed 1 (scale)", *run(torch.float32, 1))
variants = {
    "A decoder+generator bf16 (conv_post f32)": make(lambda n: True),
    "B generator only bf16": make(lambda n: n.startswith("generator")),
    "C decoder only bf16": make(lambda n: not n.startswith("generator")),
    "D all convs bf16, conv_post too": make(lambda n: True, post_bf16=True),
}
for label, d in variants.items():
    model._decoders[(BF, model.device)] = d

    report(label, *run(BF))
