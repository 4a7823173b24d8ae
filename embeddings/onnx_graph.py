"""Write all-MiniLM-L6-v2 as an ONNX graph from its safetensors weights (no torch).

``build_model(model_dir)`` computes the sentence embedding exactly as
sentence-transformers does, in standard operators written the way exporters write
them, so onnxruntime fuses them and ``quantize_dynamic`` can make it int8.
The rules: docs/how-to/development.md, The embedding model's code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17
IR_VERSION = 8
_MASKED = -10000.0


class _Graph:
    """Collects nodes and initializers; ``op`` returns the new node's output name."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        """Add ``value`` as an initializer called ``name``; returns the name."""
        self.initializers.append(self.numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        """Add one node with a fresh single output; returns that output's name."""
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        node = self.helper.make_node(
            op_type, inputs, [out], name=f"{op_type}_{self._count}", **attrs
        )
        self.nodes.append(node)
        return out

    def linear(self, x: str, name: str, weight: np.ndarray, bias: np.ndarray) -> str:
        """``x @ weight.T + bias`` with torch's (out, in) ``weight``."""
        w = self.const(f"{name}.weight", np.ascontiguousarray(weight.T, np.float32))
        b = self.const(f"{name}.bias", bias.astype(np.float32))
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(
        self, x: str, name: str, w: dict[str, np.ndarray], eps: float
    ) -> str:
        """LayerNormalization over the last axis with ``name``'s gamma and beta."""
        gamma = self.const(f"{name}.gamma", w[f"{name}.weight"].astype(np.float32))
        beta = self.const(f"{name}.beta", w[f"{name}.bias"].astype(np.float32))
        return self.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)


def _ints(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def _embeddings(g: _Graph, w: dict[str, np.ndarray], eps: float) -> str:
    """Word + (position + token type 0) embeddings, then LayerNorm."""
    word = g.const("word_embeddings", w["embeddings.word_embeddings.weight"])
    positions = (
        w["embeddings.position_embeddings.weight"]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    position = g.const("position_embeddings", positions.astype(np.float32))
    g.const("zero", _ints([0]))
    g.const("one", _ints([1]))
    g.const("one_scalar", np.asarray(1, dtype=np.int64))
    g.const("zero_scalar", np.asarray(0, dtype=np.int64))
    shape = g.op("Shape", ["input_ids"])
    width = g.op("Squeeze", [g.op("Gather", [shape, "one"], axis=0), "zero"])
    ids = g.op("Range", ["zero_scalar", width, "one_scalar"])
    summed = g.op(
        "Add",
        [g.op("Gather", [word, "input_ids"]), g.op("Gather", [position, ids])],
    )
    return g.layer_norm(summed, "embeddings.LayerNorm", w, eps)


def _heads(g: _Graph, x: str, heads: int, head_dim: int, perm: list[int]) -> str:
    """(batch, tokens, hidden) -> per-head layout given by ``perm``."""
    shape = g.const(f"heads_shape_{len(g.nodes)}", _ints([0, 0, heads, head_dim]))
    return g.op("Transpose", [g.op("Reshape", [x, shape])], perm=perm)


def _attention(
    g: _Graph, x: str, prefix: str, w: dict[str, np.ndarray], dims: tuple[int, int]
) -> str:
    """Multi-head self-attention of one layer; returns (batch, tokens, hidden)."""
    heads, hidden = dims
    head_dim = hidden // heads
    scale = np.float32(1.0 / np.sqrt(head_dim))
    p = prefix + "attention.self."
    q = g.linear(
        x, p + "query", w[p + "query.weight"] * scale, w[p + "query.bias"] * scale
    )
    k = g.linear(x, p + "key", w[p + "key.weight"], w[p + "key.bias"])
    v = g.linear(x, p + "value", w[p + "value.weight"], w[p + "value.bias"])
    scores = g.op(
        "MatMul",
        [
            _heads(g, q, heads, head_dim, [0, 2, 1, 3]),
            _heads(g, k, heads, head_dim, [0, 2, 3, 1]),
        ],
    )
    probs = g.op("Softmax", [g.op("Add", [scores, "mask_bias"])], axis=-1)
    context = g.op("MatMul", [probs, _heads(g, v, heads, head_dim, [0, 2, 1, 3])])
    merged = g.op(
        "Reshape",
        [
            g.op("Transpose", [context], perm=[0, 2, 1, 3]),
            g.const(f"merge_{prefix}", _ints([0, 0, hidden])),
        ],
    )
    o = prefix + "attention.output.dense"
    return g.linear(merged, o, w[o + ".weight"], w[o + ".bias"])


def _layer(
    g: _Graph, x: str, i: int, w: dict[str, np.ndarray], config: dict[str, Any]
) -> str:
    """One encoder layer: attention, residual + LayerNorm, GELU FFN, residual + LN."""
    prefix, eps = f"encoder.layer.{i}.", float(config["eps"])
    attended = _attention(g, x, prefix, w, (config["heads"], config["hidden"]))
    x = g.layer_norm(
        g.op("Add", [attended, x]), prefix + "attention.output.LayerNorm", w, eps
    )
    inner = g.linear(
        x,
        prefix + "intermediate.dense",
        w[prefix + "intermediate.dense.weight"],
        w[prefix + "intermediate.dense.bias"],
    )
    half = g.op("Mul", [inner, "half"])
    erf = g.op("Erf", [g.op("Div", [inner, "sqrt2"])])
    gelu = g.op("Mul", [half, g.op("Add", [erf, "one_float"])])
    out = g.linear(
        gelu,
        prefix + "output.dense",
        w[prefix + "output.dense.weight"],
        w[prefix + "output.dense.bias"],
    )
    return g.layer_norm(g.op("Add", [out, x]), prefix + "output.LayerNorm", w, eps)


def _mask_inputs(g: _Graph) -> str:
    """The additive attention bias (batch, 1, 1, tokens); returns the float mask."""
    g.const("half", np.asarray(0.5, dtype=np.float32))
    g.const("sqrt2", np.asarray(np.sqrt(2.0), dtype=np.float32))
    g.const("one_float", np.asarray(1.0, dtype=np.float32))
    g.const("masked", np.asarray(_MASKED, dtype=np.float32))
    g.const("mask_axes", _ints([1, 2]))
    mask = g.op("Cast", ["attention_mask"], to=1)  # FLOAT
    bias = g.op("Mul", [g.op("Sub", ["one_float", mask]), "masked"])
    g.nodes.append(g.helper.make_node("Unsqueeze", [bias, "mask_axes"], ["mask_bias"]))
    return mask


def _pool(g: _Graph, x: str, mask: str) -> None:
    """Mean over the real tokens, L2-normalised, as ``sentence_embedding``."""
    g.const("pool_axis", _ints([1]))
    g.const("last_axis", _ints([2]))
    g.const("tiny", np.asarray(1e-9, dtype=np.float32))
    g.const("norm_floor", np.asarray(1e-12, dtype=np.float32))
    weights = g.op("Unsqueeze", [mask, "last_axis"])
    summed = g.op("ReduceSum", [g.op("Mul", [x, weights]), "pool_axis"], keepdims=0)
    count = g.op("Max", [g.op("ReduceSum", [weights, "pool_axis"], keepdims=0), "tiny"])
    mean = g.op("Div", [summed, count])
    norm = g.op("Max", [g.op("ReduceL2", [mean], axes=[1], keepdims=1), "norm_floor"])
    g.nodes.append(g.helper.make_node("Div", [mean, norm], ["sentence_embedding"]))


def read_config(model_dir: Path) -> dict[str, Any]:
    """hidden size, heads, LayerNorm epsilon and layer count from config.json."""
    bert = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if bert.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"unsupported activation {bert.get('hidden_act')!r}")
    return {
        "hidden": int(bert["hidden_size"]),
        "heads": int(bert["num_attention_heads"]),
        "eps": float(bert.get("layer_norm_eps", 1e-12)),
        "layers": int(bert["num_hidden_layers"]),
    }


def build_model(model_dir: str | Path) -> Any:
    """The fp32 ONNX model of the sentence encoder in ``model_dir`` (ModelProto)."""
    from onnx import TensorProto, checker, helper
    from safetensors.numpy import load_file

    path = Path(model_dir)
    config = read_config(path)
    raw = load_file(str(path / "model.safetensors"))
    w = {key.removeprefix("bert."): value for key, value in raw.items()}
    g = _Graph()
    mask = _mask_inputs(g)
    x = _embeddings(g, w, config["eps"])
    for i in range(config["layers"]):
        x = _layer(g, x, i, w, config)
    _pool(g, x, mask)
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
            for name in ("input_ids", "attention_mask")
        ],
        [
            helper.make_tensor_value_info(
                "sentence_embedding", TensorProto.FLOAT, ["batch", config["hidden"]]
            )
        ],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    checker.check_model(model)
    return model


def ffn_output_nodes(model: Any) -> list[str]:
    """Names of the MatMuls of each layer's feed-forward output projection.

    They read the GELU activations, whose outliers a per-tensor uint8 activation
    scale represents badly: quantising them costs most of the int8 error (cosine
    to fp32 0.980 at worst, mean 0.9935, on the reference texts), keeping them in
    float32 gives 0.990 at worst, mean 0.997, for ~45% more time per query.
    Those figures are from a CPU with VNNI; see ``quantize_int8`` for AVX2.
    """
    return [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul"
        and node.input[1].endswith("output.dense.weight")
        and "attention" not in node.input[1]
    ]


def quantize_int8(fp32_path: Path, int8_path: Path) -> None:
    """Per-channel dynamic int8 quantisation of the weight MatMuls (not FFN out).

    Weights use 7 bits (``reduce_range``): on x86 CPUs without VNNI (AVX2 only, e.g.
    the AMD EPYC machines CI runs on) onnxruntime's u8 x s8 kernel adds pairs of
    products in saturating int16, and full-range weights overflow it. Measured on the
    reference texts there, cosine to torch at worst / mean: 0.980 / 0.9950 with full
    range, 0.988 / 0.9962 with ``reduce_range``."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        fp32_path,
        int8_path,
        per_channel=True,
        reduce_range=True,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        nodes_to_exclude=ffn_output_nodes(onnx.load(str(fp32_path))),
        extra_options={"MatMulConstBOnly": True},
    )


def main(argv: list[str]) -> None:
    """``python -m embeddings.onnx_graph MODEL_DIR FP32_OUT INT8_OUT``."""
    import onnx

    model_dir, fp32_out, int8_out = (Path(arg) for arg in argv)
    onnx.save(build_model(model_dir), str(fp32_out))
    quantize_int8(fp32_out, int8_out)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
