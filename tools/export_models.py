#!/usr/bin/python3
"""Export placer's model zoo as weightless ONNX files plus the expected values in zoo.json.

Every model is built in plain torch/torchvision with seeded random weights, exported to
ONNX (opset 14, constant folding on), checked, shape-inferred, and written to
models/NAME.onnx with the weight payloads removed (dims, dtypes and the inferred
value_info stay). models/zoo.json records ops, params, I/O and hand-computed FLOPs of a
few nodes, all computed with the onnx package, so placer's C tests have an independent
oracle. `--full NAME...` writes complete models (with weights) to models/full/ for the
benchmarks instead. See models/README.md.

Run with Debian's interpreter: /usr/bin/python3 tools/export_models.py (`make models`).
"""

import argparse
import io
import json
import math
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo_facts import (DEFINITION, OPSET, SEED, describe, flops_record,  # noqa: E402
                       strip_weights, write_zoo)

REPO = Path(__file__).resolve().parent.parent

# ----------------------------------------------------------------------------------------
# Models written in plain torch (no `transformers` available).
# ----------------------------------------------------------------------------------------


class Dense(nn.Module):
    """y = x @ W + b with W stored as [in, out] (GPT-2's "Conv1D" layout).

    The exported MatMul reads the parameter directly. nn.Linear would export
    MatMul(x, Transpose(W)), and constant folding turns each Transpose of a shared weight
    into a separate copy, which matters for tied weights and unrolled loops.
    """

    def __init__(self, n_in: int, n_out: int, bias: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.empty(n_out)) if bias else None

    def forward(self, x):
        y = x @ self.weight
        return y if self.bias is None else y + self.bias


def attention(q, k, v, heads: int, bias=None):
    """Multi-head scaled dot-product attention. q: [B, Tq, D]; k, v: [B, Tk, D]; bias, if
    given, is added to the [B, heads, Tq, Tk] scores (0 keeps a position, -10000 masks it).
    All reshapes use static sizes so every tensor in the export has a known shape."""

    def split(x):
        b, t, d = x.shape
        return x.reshape(b, t, heads, d // heads).transpose(1, 2)

    b, t, d = q.shape
    scores = split(q) @ split(k).transpose(-1, -2) / math.sqrt(d // heads)
    if bias is not None:
        scores = scores + bias
    return (scores.softmax(-1) @ split(v)).transpose(1, 2).reshape(b, t, d)


def causal_bias(length: int):
    """[1, 1, T, T] additive mask letting position i attend to positions <= i only."""
    future = torch.ones(length, length).triu(1).bool()
    return torch.zeros(1, 1, length, length).masked_fill(future, -10000.0)


class MultiHeadAttention(nn.Module):
    """Separate Q/K/V/output projections around attention() (BERT and Transformer style)."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x, memory, bias=None):
        a = attention(self.query(x), self.key(memory), self.value(memory), self.heads, bias)
        return self.out(a)


class BertLayer(nn.Module):
    """Post-LayerNorm encoder layer as in BERT: attention, add & norm, GELU FFN, add & norm."""

    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.attention = MultiHeadAttention(hidden, heads)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, ffn)
        self.output = nn.Linear(ffn, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask_bias):
        x = self.attention_norm(x + self.attention(x, x, mask_bias))
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


class Bert(nn.Module):
    """BERT encoder: word + position + token-type embeddings, LayerNorm, N layers, pooler."""

    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, ffn=3072,
                 max_positions=512, token_types=2, seq_len=128):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(token_types, hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        self.register_buffer("position_ids", torch.arange(seq_len).unsqueeze(0))

    def forward(self, input_ids, token_type_ids, attention_mask):
        x = (self.word_embeddings(input_ids) + self.position_embeddings(self.position_ids)
             + self.token_type_embeddings(token_type_ids))
        x = self.embedding_norm(x)
        # Computed once and shared by all layers: [B, 1, 1, T], 0 for tokens, -1e4 for padding.
        mask_bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x, torch.tanh(self.pooler(x[:, 0]))


def gelu_new(x):
    """GPT-2's tanh approximation of GELU ("gelu_new")."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class Gpt2Block(nn.Module):
    """Pre-LayerNorm decoder block: fused QKV projection, causal attention, tanh-GELU MLP."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = Dense(hidden, 3 * hidden)
        self.attn_proj = Dense(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = Dense(hidden, 4 * hidden)
        self.mlp_proj = Dense(4 * hidden, hidden)

    def forward(self, x, causal_bias):
        q, k, v = self.c_attn(self.ln_1(x)).split(x.shape[-1], dim=2)
        x = x + self.attn_proj(attention(q, k, v, self.heads, causal_bias))
        return x + self.mlp_proj(gelu_new(self.c_fc(self.ln_2(x))))


class Gpt2(nn.Module):
    """GPT-2 language model with the LM head tied to the token embedding."""

    def __init__(self, vocab=50257, hidden=768, layers=12, heads=12, n_positions=1024,
                 seq_len=128):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(n_positions, hidden)
        self.blocks = nn.ModuleList(Gpt2Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.register_buffer("position_ids", torch.arange(seq_len).unsqueeze(0))
        self.register_buffer("causal_bias", causal_bias(seq_len))

    def forward(self, input_ids):
        x = self.wte(input_ids) + self.wpe(self.position_ids)
        for block in self.blocks:
            x = block(x, self.causal_bias)
        h = self.ln_f(x)
        # Tied head as wte @ h^T rather than h @ wte^T: the exported MatMul then reads the
        # embedding initializer itself, whereas a Transpose of it would be constant-folded
        # into a second 38.6M-element copy. Same FLOPs, one extra activation Transpose.
        return (self.wte.weight @ h.transpose(1, 2)).transpose(1, 2)


def sinusoidal_positions(length: int, d_model: int):
    """The fixed sine/cosine position encoding of "Attention Is All You Need", [1, L, D]."""
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32)
                     * (-math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe.unsqueeze(0)


class TransformerLayer(nn.Module):
    """Post-LayerNorm layer of "Attention Is All You Need": self-attention, cross-attention
    over the encoder output (decoder layers only), ReLU FFN; each followed by add & norm."""

    def __init__(self, d_model: int, heads: int, ffn: int, decoder: bool):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads)
        self.self_attn_norm = nn.LayerNorm(d_model)
        if decoder:
            self.cross_attn = MultiHeadAttention(d_model, heads)
            self.cross_attn_norm = nn.LayerNorm(d_model)
        self.ffn_in = nn.Linear(d_model, ffn)
        self.ffn_out = nn.Linear(ffn, d_model)
        self.ffn_norm = nn.LayerNorm(d_model)

    def forward(self, x, self_bias=None, memory=None):
        x = self.self_attn_norm(x + self.self_attn(x, x, self_bias))
        if memory is not None:
            x = self.cross_attn_norm(x + self.cross_attn(x, memory))
        return self.ffn_norm(x + self.ffn_out(F.relu(self.ffn_in(x))))


class Seq2SeqTransformer(nn.Module):
    """Transformer "base" encoder-decoder. Written out rather than nn.Transformer, whose
    packed in-projection exports as Shape/Slice arithmetic that leaves shapes unknown.
    Separate source/target embeddings and an untied output projection."""

    def __init__(self, vocab=32000, d_model=512, heads=8, layers=6, ffn=2048, seq_len=64):
        super().__init__()
        self.scale = math.sqrt(d_model)
        self.src_embed = nn.Embedding(vocab, d_model)
        self.tgt_embed = nn.Embedding(vocab, d_model)
        self.encoder = nn.ModuleList(TransformerLayer(d_model, heads, ffn, decoder=False)
                                     for _ in range(layers))
        self.decoder = nn.ModuleList(TransformerLayer(d_model, heads, ffn, decoder=True)
                                     for _ in range(layers))
        self.generator = nn.Linear(d_model, vocab)
        self.register_buffer("positions", sinusoidal_positions(seq_len, d_model))
        self.register_buffer("causal_bias", causal_bias(seq_len))

    def forward(self, src_ids, tgt_ids):
        memory = self.src_embed(src_ids) * self.scale + self.positions
        for layer in self.encoder:
            memory = layer(memory)
        x = self.tgt_embed(tgt_ids) * self.scale + self.positions
        for layer in self.decoder:
            x = layer(x, self.causal_bias, memory)
        return self.generator(x)


class LSTMCell(nn.Module):
    """One LSTM step written out so that, traced in a Python loop, every time step becomes
    its own MatMul/Add/Split/Sigmoid/Tanh/Mul nodes. Same parameters as nn.LSTMCell."""

    def __init__(self, n_in: int, hidden: int):
        super().__init__()
        self.hidden = hidden
        self.ih = Dense(n_in, 4 * hidden)
        self.hh = Dense(hidden, 4 * hidden)

    def forward(self, x, h, c):
        # split() with a static size exports as one Split; chunk() would compute the
        # sizes from Shape at run time and leave the gate shapes unknown.
        i, f, g, o = (self.ih(x) + self.hh(h)).split(self.hidden, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c


class UnrolledLSTM(nn.Module):
    """Multi-layer LSTM over [T, B, n_in] from a zero state, unrolled time step by time step
    (the interface of nn.LSTM without hx)."""

    def __init__(self, n_in: int, hidden: int, layers: int):
        super().__init__()
        self.hidden = hidden
        self.cells = nn.ModuleList(LSTMCell(n_in if i == 0 else hidden, hidden)
                                   for i in range(layers))

    def forward(self, x):
        zeros = torch.zeros(x.shape[1], self.hidden)
        h = [zeros] * len(self.cells)
        c = [zeros] * len(self.cells)
        outputs = []
        for x_t in x.unbind(0):
            for layer, cell in enumerate(self.cells):
                h[layer], c[layer] = cell(x_t, h[layer], c[layer])
                x_t = h[layer]
            outputs.append(x_t)
        return torch.stack(outputs), (torch.stack(h), torch.stack(c))


class RnnLM(nn.Module):
    """Word-level LSTM language model (Zaremba et al. 2014 "medium" PTB configuration)."""

    def __init__(self, unrolled: bool, vocab=10000, hidden=650, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = (UnrolledLSTM(hidden, hidden, layers) if unrolled
                    else nn.LSTM(hidden, hidden, layers))
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.rnn(self.embed(tokens))
        return self.decoder(out)


class NmtSeq2Seq(nn.Module):
    """LSTM encoder-decoder with Luong global "dot" attention and input feeding.

    The encoder is an nn.LSTM (one ONNX LSTM node per layer); the decoder is unrolled over
    the target steps (teacher forcing), so the graph has no Loop. Per step: the embedded
    target token and the previous attentional state go through the decoder cells, the top
    hidden state scores the encoder outputs, and tanh(Wc [context; h]) is the attentional
    state. All steps share one output projection.
    """

    def __init__(self, vocab=32000, hidden=512, layers=2):
        super().__init__()
        self.hidden = hidden
        self.src_embed = nn.Embedding(vocab, hidden)
        self.tgt_embed = nn.Embedding(vocab, hidden)
        self.encoder = nn.LSTM(hidden, hidden, layers)
        self.decoder = nn.ModuleList(LSTMCell(2 * hidden if i == 0 else hidden, hidden)
                                     for i in range(layers))
        self.attn_combine = Dense(2 * hidden, hidden, bias=False)
        self.generator = nn.Linear(hidden, vocab)

    def forward(self, src_ids, tgt_ids):
        memory, (h_n, c_n) = self.encoder(self.src_embed(src_ids))  # memory: [S, B, H]
        keys = memory.transpose(0, 1)  # [B, S, H]
        h, c = list(h_n.unbind(0)), list(c_n.unbind(0))
        feed = torch.zeros(src_ids.shape[1], self.hidden)
        outputs = []
        for emb_t in self.tgt_embed(tgt_ids).unbind(0):
            x = torch.cat([emb_t, feed], dim=1)
            for layer, cell in enumerate(self.decoder):
                h[layer], c[layer] = cell(x, h[layer], c[layer])
                x = h[layer]
            weights = torch.bmm(keys, x.unsqueeze(2)).softmax(dim=1)  # [B, S, 1]
            context = torch.bmm(weights.transpose(1, 2), keys).squeeze(1)  # [B, H]
            feed = torch.tanh(self.attn_combine(torch.cat([context, x], dim=1)))
            outputs.append(feed)
        return self.generator(torch.stack(outputs))


class Gcn(nn.Module):
    """Two-layer graph convolutional network (Kipf & Welling, ICLR 2017) on Cora's sizes:
    2708 nodes, 1433 features, 16 hidden units, 7 classes. Z = A relu(A X W1 + b1) W2 + b2,
    with A the normalised adjacency (self-loops, D^-1/2 (A + I) D^-1/2) given as a dense
    input, as MOPAR's GCN services take the graph with each request.
    """

    def __init__(self, features=1433, hidden=16, classes=7):
        super().__init__()
        self.w1 = Dense(features, hidden)
        self.w2 = Dense(hidden, classes)

    def forward(self, x, adj):
        h = torch.relu(adj @ self.w1(x))
        return adj @ self.w2(h)


def cora(g):
    x = torch.randn(2708, 1433, generator=g)
    a = (torch.rand(2708, 2708, generator=g) < 0.0015).float()
    a = ((a + a.t()) > 0).float() + torch.eye(2708)
    d = a.sum(1).rsqrt()
    return x, d[:, None] * a * d[None, :]


# ----------------------------------------------------------------------------------------
# The zoo.
# ----------------------------------------------------------------------------------------


def tokens(vocab: int, *shape: int):
    """Example-input factory: random token ids of the given shape."""
    return lambda g: torch.randint(vocab, shape, generator=g)


def image(size: int):
    return lambda g: torch.randn(1, 3, size, size, generator=g)


def bert_inputs(g):
    ids = torch.randint(30522, (1, 128), generator=g)
    token_types = torch.cat([torch.zeros(1, 64, dtype=torch.long),
                             torch.ones(1, 64, dtype=torch.long)], dim=1)
    return ids, token_types, torch.ones(1, 128, dtype=torch.long)


@dataclass
class Spec:
    build: Callable[[], nn.Module]
    example: Callable[[torch.Generator], object]  # one tensor or a tuple of them
    input_names: List[str]
    output_names: List[str]
    flops_nodes: List[str]  # node names whose FLOPs go into zoo.json
    # Why torch's parameter count and the ONNX params differ (see torch_params in zoo.json).
    note: str = ""


BN_NOTE = ("Below torch_params: eval-mode export folds each BatchNorm into the preceding "
           "Conv, so the BN scale and shift (2*C parameters) become a C-element Conv bias.")
CONST_NOTE = ("Above torch_params by constant tensors that are not torch parameters: {what} "
              "and the small shape/scalar constants.")
ZERO_STATE = "the zero initial LSTM states"

MODELS: Dict[str, Spec] = {
    "inception_v3": Spec(
        lambda: torchvision.models.inception_v3(weights=None, aux_logits=False,
                                                init_weights=False),
        image(299), ["image"], ["logits"],
        ["/Conv2d_1a_3x3/conv/Conv", "/Mixed_6b/branch7x7_2/conv/Conv"], BN_NOTE),
    "resnet50": Spec(
        lambda: torchvision.models.resnet50(weights=None), image(224), ["image"], ["logits"],
        ["/conv1/Conv", "/layer3/layer3.0/conv2/Conv", "/fc/Gemm"], BN_NOTE),
    "resnext50_32x4d": Spec(
        lambda: torchvision.models.resnext50_32x4d(weights=None), image(224), ["image"],
        ["logits"], ["/conv1/Conv", "/layer2/layer2.0/conv2/Conv"], BN_NOTE),
    "mobilenet_v3_large": Spec(
        lambda: torchvision.models.mobilenet_v3_large(weights=None), image(224), ["image"],
        ["logits"],
        ["/features/features.0/features.0.0/Conv",
         "/features/features.2/block/block.1/block.1.0/Conv", "/classifier/classifier.0/Gemm"],
        BN_NOTE),
    "vgg19": Spec(
        lambda: torchvision.models.vgg19(weights=None), image(224), ["image"], ["logits"],
        ["/features/features.0/Conv", "/features/features.34/Conv",
         "/classifier/classifier.0/Gemm"]),
    "bert_base": Spec(
        Bert, bert_inputs, ["input_ids", "token_type_ids", "attention_mask"],
        ["last_hidden_state", "pooler_output"],
        ["/layers.0/attention/query/MatMul", "/layers.0/attention/MatMul"],
        CONST_NOTE.format(what="the position-id buffer")),
    "gpt2_small": Spec(
        Gpt2, tokens(50257, 1, 128), ["input_ids"], ["logits"],
        ["/blocks.0/c_attn/MatMul", "/MatMul"],
        CONST_NOTE.format(what="the causal mask and the position-id buffer")
        + " The tied token embedding is one initializer, read by both Gather and the LM-head "
        "MatMul."),
    "transformer": Spec(
        Seq2SeqTransformer, lambda g: (torch.randint(32000, (1, 64), generator=g),
                                        torch.randint(32000, (1, 64), generator=g)),
        ["src_ids", "tgt_ids"], ["logits"],
        ["/encoder.0/self_attn/query/MatMul", "/generator/MatMul"],
        CONST_NOTE.format(what="the sinusoidal position table and the causal mask")),
    "rnnlm": Spec(
        lambda: RnnLM(unrolled=False), tokens(10000, 35, 20), ["tokens"], ["logits"],
        ["/decoder/MatMul"], CONST_NOTE.format(what=ZERO_STATE)),
    "rnnlm_unrolled": Spec(
        lambda: RnnLM(unrolled=True), tokens(10000, 35, 20), ["tokens"], ["logits"],
        ["/rnn/cells.0/ih/MatMul", "/decoder/MatMul"],
        CONST_NOTE.format(what=ZERO_STATE)),
    "gcn_cora": Spec(
        Gcn, cora, ["features", "adjacency"], ["logits"], ["/MatMul"]),
    "nmt_seq2seq": Spec(
        NmtSeq2Seq, lambda g: (torch.randint(32000, (32, 1), generator=g),
                                torch.randint(32000, (24, 1), generator=g)),
        ["src_ids", "tgt_ids"], ["logits"],
        ["/MatMul", "/generator/MatMul"],
        CONST_NOTE.format(what=ZERO_STATE + " and input-feeding vector")),
}


# ----------------------------------------------------------------------------------------
# Export.
# ----------------------------------------------------------------------------------------


def randomize(module: nn.Module, seed: int):
    """Give every parameter distinct seeded random values.

    The exporter merges initializers with identical contents (fresh LayerNorm weights are
    all ones, deep-copied layers start out equal), which would make per-layer weights
    disappear from the graph. BatchNorm statistics are randomized too (variance kept
    positive) so the Conv+BN folding yields distinct weights; other buffers are
    deliberate constants (masks, position tables) and stay.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, 0.02, generator=g)
        for name, buf in module.named_buffers():
            if name.endswith("running_mean"):
                buf.normal_(0.0, 0.02, generator=g)
            elif name.endswith("running_var"):
                buf.uniform_(0.5, 1.5, generator=g)


def export(spec: Spec) -> Tuple[onnx.ModelProto, int]:
    """Builds, exports, checks and shape-infers one model; returns it with torch's count."""
    torch.manual_seed(SEED)
    module = spec.build().eval()
    randomize(module, SEED)
    example = spec.example(torch.Generator().manual_seed(SEED))
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer chatter about Python-constant shapes
        torch.onnx.export(module, example, buf, opset_version=OPSET, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.EVAL,
                          input_names=spec.input_names, output_names=spec.output_names)
    model = onnx.load_from_string(buf.getvalue())
    # Strict inference raises on any shape or type inconsistency, which is all that
    # check_model(full_check=True) would add, so the checker runs without it (half the time
    # on the 500 MB models). data_prop lets shapes flow through Shape/Gather/Concat chains.
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                             data_prop=True)
    onnx.checker.check_model(model)
    return model, sum(p.numel() for p in module.parameters())


# ----------------------------------------------------------------------------------------
# Driver.
# ----------------------------------------------------------------------------------------


def build_one(name: str, out_dir: Path, full: bool, zoo: dict) -> str:
    """Exports one model; writes either the weightless file (and its zoo entry) or, with
    `full`, the complete model under out_dir/full. Returns the progress line."""
    start = time.monotonic()
    spec = MODELS[name]
    model, torch_params = export(spec)
    stats = describe(model)
    if full:
        path = out_dir / "full" / f"{name}.onnx"
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(model, str(path))
        committed = zoo.get(name)
        if committed and any(committed.get(k) != v for k, v in stats.items()):
            print(f"warning: {name}: full model differs from zoo.json (other torch?)",
                  file=sys.stderr)
    else:
        entry = dict(stats)
        entry["torch_params"] = torch_params
        entry["flops_check"] = [flops_record(model.graph, n) for n in spec.flops_nodes]
        if spec.note:
            entry["note"] = spec.note
        elif abs(stats["params"] - torch_params) > 0.005 * torch_params:
            raise RuntimeError(f"{name}: params differ from torch's by >0.5%; add a note")
        strip_weights(model)
        if describe(model) != stats:
            raise RuntimeError(f"{name}: stripping the weights changed the counts")
        path = out_dir / f"{name}.onnx"
        onnx.save(model, str(path))
        onnx.load(str(path))  # the committed file must load on its own
        zoo[name] = entry
    size = path.stat().st_size
    return (f"{name:16s} ops {stats['ops']:5d}  params {stats['params']:>11,}  "
            f"{size / 1024:10.1f} KiB  {time.monotonic() - start:5.1f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--only", nargs="+", choices=MODELS, metavar="NAME",
                       help="export only these weightless models (zoo.json keeps the rest)")
    which.add_argument("--full", nargs="+", choices=MODELS, metavar="NAME",
                       help="write these models with weights to OUT/full/ (nothing else)")
    ap.add_argument("--out", type=Path, default=REPO / "models",
                    help="output directory (default: models/ in the repository)")
    args = ap.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    zoo_path = args.out / "zoo.json"
    old = json.loads(zoo_path.read_text())["models"] if zoo_path.exists() else {}
    # A full export of everything rebuilds zoo.json; subsets update it.
    zoo = old if (args.only or args.full) else {}
    names = args.full or args.only or list(MODELS)
    start = time.monotonic()
    for name in names:
        print(build_one(name, args.out, bool(args.full), zoo), flush=True)
    if not args.full:
        doc = {"definition": DEFINITION,
               "generator": {"script": "tools/export_models.py", "torch": torch.__version__,
                             "torchvision": torchvision.__version__,
                             "onnx": onnx.__version__, "opset": OPSET, "seed": SEED},
               "models": {n: zoo[n] for n in MODELS if n in zoo}}
        write_zoo(zoo_path, doc)
    print(f"{len(names)} models in {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
