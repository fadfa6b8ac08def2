"""A model folder whose greedy output is a given script, to test what the server does with a
model's output (tool-call parsing) through the real engine, tokenizer and detokenizer.

The model is a Llama with one layer that adds nothing (zero attention and MLP output weights):
the logits depend only on the current token, through its embedding and lm_head. Each piece of
the script is its own added token (special or not, as the family's tokenizer has it), so the
chain "any other token -> piece 1 -> piece 2 -> ... -> <|im_end|>" is a next-token table:
token i's embedding is a one-hot of slot i, and lm_head row of the next piece reads that slot.
Whatever the prompt, its last token is not a piece, so greedy decoding writes the script and
stops. The tokenizer is models/tiny-llama's with the pieces and markers added (special
markers decode only when the server keeps them, as real special tokens).
Only the standard library is used (safetensors is written by hand, in bfloat16).
"""

import json
import os
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = os.path.join(ROOT, "models", "tiny-llama")

HIDDEN = 128
EOS_ID = 2  # <|im_end|> in tiny-llama's tokenizer


def _bf16(values):
    out = bytearray()
    for v in values:
        out += struct.pack("<f", v)[2:]  # exact for the 0 and 1 used here
    return bytes(out)


def _write_safetensors(path, tensors):
    """tensors: name -> (shape, flat list of floats)."""
    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        blob = _bf16(values)
        header[name] = {"dtype": "BF16", "shape": list(shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(header).encode()
    head += b" " * ((8 - len(head) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


def write_scripted_model(folder, pieces, special=()):
    """Writes a model folder that answers every prompt with "".join(pieces), then EOS.

    `pieces`: the script as its tokens (each distinct, none an existing token of the base
    vocabulary). `special`: pieces that are special tokens (markers such as [TOOL_CALLS]),
    which plain decoding drops. Returns the folder.
    """
    if len(set(pieces)) != len(pieces) or len(pieces) + 1 > HIDDEN:
        raise ValueError("pieces must be distinct and fewer than %d" % HIDDEN)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(BASE, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    base_vocab = len(tok["model"]["vocab"])
    known = {t["content"] for t in tok["added_tokens"]}
    ids = {}
    for i, piece in enumerate(pieces):
        if piece in known or piece in tok["model"]["vocab"]:
            raise ValueError("piece %r is already a token" % piece)
        ids[piece] = base_vocab + i
        tok["added_tokens"].append({
            "id": base_vocab + i, "content": piece, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": piece in special})
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    for name in ("tokenizer_config.json", "generation_config.json"):
        shutil.copy(os.path.join(BASE, name), os.path.join(folder, name))

    vocab = base_vocab + len(pieces)
    with open(os.path.join(BASE, "config.json")) as f:
        config = json.load(f)
    config.update({"hidden_size": HIDDEN, "intermediate_size": HIDDEN, "num_hidden_layers": 1,
                   "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
                   "vocab_size": vocab, "max_position_embeddings": 8192,
                   "rope_scaling": None, "tie_word_embeddings": False})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=1)

    # Slot 0 is every token outside the script; piece i is slot i + 1.
    embed = [0.0] * (vocab * HIDDEN)
    for t in range(vocab):
        slot = t - base_vocab + 1 if t >= base_vocab else 0
        embed[t * HIDDEN + slot] = 1.0
    head = [0.0] * (vocab * HIDDEN)
    chain = [ids[p] for p in pieces] + [EOS_ID]
    for slot, nxt in enumerate(chain):  # slot k is followed by chain[k]
        head[nxt * HIDDEN + slot] = 1.0
    zeros = lambda rows, cols: ((rows, cols), [0.0] * (rows * cols))
    ones = lambda n: ((n,), [1.0] * n)
    _write_safetensors(os.path.join(folder, "model.safetensors"), {
        "model.embed_tokens.weight": ((vocab, HIDDEN), embed),
        "model.layers.0.input_layernorm.weight": ones(HIDDEN),
        "model.layers.0.self_attn.q_proj.weight": zeros(128, HIDDEN),
        "model.layers.0.self_attn.k_proj.weight": zeros(64, HIDDEN),
        "model.layers.0.self_attn.v_proj.weight": zeros(64, HIDDEN),
        "model.layers.0.self_attn.o_proj.weight": zeros(HIDDEN, 128),
        "model.layers.0.post_attention_layernorm.weight": ones(HIDDEN),
        "model.layers.0.mlp.gate_proj.weight": zeros(HIDDEN, HIDDEN),
        "model.layers.0.mlp.up_proj.weight": zeros(HIDDEN, HIDDEN),
        "model.layers.0.mlp.down_proj.weight": zeros(HIDDEN, HIDDEN),
        "model.norm.weight": ones(HIDDEN),
        "lm_head.weight": ((vocab, HIDDEN), head),
    })
    return folder
