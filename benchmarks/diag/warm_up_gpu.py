"""Session.warm_up_serving on a GPU with every failure's traceback: then each of its sentences alone, with and
without CUDA graphs (S13b: the warm-up's batch of 16 failed, 'size of tensor a (96) must match ... (128)')."""
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tilewave.engine import Session  # noqa: E402
from tilewave.engine.session import _WARM_UP_WORDS  # noqa: E402


def cause(exc: BaseException) -> None:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    traceback.print_exception(exc, limit=-12, file=sys.stdout)


for graphs in (True, False):
    print(f"\n## cuda_graphs={graphs}", flush=True)
    with Session(device="cuda", cuda_graphs=graphs) as s:
        for i in range(16):
            text = " ".join(_WARM_UP_WORDS[:3 + i]) + "."
            try:
                audio, _ = s.speak(text, seed=0)
                print(f"alone ok {i}: {len(s.pipeline.iter_chunks(text, False, None, True)[0])} chunk(s), "
                      f"{audio.size} samples", flush=True)
            except Exception as exc:  # noqa: BLE001
                print(f"alone FAILED {i}: {text!r}", flush=True)
                cause(exc)
        try:
            s.warm_up_serving()
            print("warm_up_serving ok", [b.size for b in s.batches()][-6:], flush=True)
        except Exception as exc:  # noqa: BLE001
            print("warm_up_serving FAILED", flush=True)
            cause(exc)
