#!/usr/bin/env python3
"""Writes a llama-architecture GGUF with random weights that llama.cpp's llama-server loads and answers from.

    python tiny_gguf.py OUT.gguf [--size-mb 6]

The tests' real model: it exists so that a real llama-server holds memory of a chosen size and generates
(garbage) tokens for as long as a client asks. Needs PyPI's gguf==0.19.0 (the gguf-py lilbee pins; it brings
numpy). Deterministic for a seed. Its vocabulary is SentencePiece-style: llama.cpp needs the 256 byte tokens
(it falls back to them for any character it has no piece for); a few hundred pieces make any text tokenize.
Its size is set by the number of layers at a fixed width: 256 wide below 64 MiB, 1024 wide above.
"""
import argparse
import math
import sys

import gguf
import numpy as np

WORD = "\u2581"  # SentencePiece's mark of a word's start
CHATML = (
    "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{'<|im_start|>assistant\n'}}{% endif %}"
)
HEAD = 64


def vocabulary():
    """(pieces, scores, types): the control tokens, the byte tokens, then printable pieces, longer ones first merged."""
    pieces = [("<unk>", gguf.TokenType.UNKNOWN), ("<s>", gguf.TokenType.CONTROL), ("</s>", gguf.TokenType.CONTROL)]
    pieces += [(f"<0x{b:02X}>", gguf.TokenType.BYTE) for b in range(256)]
    normal = [WORD] + [chr(c) for c in range(33, 127)] + [WORD + chr(c) for c in range(ord("a"), ord("z") + 1)]
    normal += [WORD + w for w in ("the", "a", "is", "of", "and", "to", "in", "hello", "world", "you", "I")]
    # Each piece once: llama.cpp refuses a vocabulary with two tokens of one text.
    seen = {p for p, _ in pieces}
    normal = [p for p in dict.fromkeys(normal) if p not in seen]
    scores = [0.0] * len(pieces)
    for i, piece in enumerate(normal):
        pieces.append((piece, gguf.TokenType.NORMAL))
        scores.append(-1000.0 + 10.0 * len(piece) - i * 0.001)
    return [p for p, _ in pieces], scores, [int(t) for _, t in pieces]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="the GGUF file to write")
    parser.add_argument("--size-mb", type=float, default=6.0, help="about how large the file is, in MiB (default 6)")
    parser.add_argument("--seed", type=int, default=0, help="the weights' random seed (default 0)")
    args = parser.parse_args()
    if args.size_mb <= 0:
        parser.error("--size-mb must be positive")

    tokens, scores, types = vocabulary()
    width = 256 if args.size_mb < 64 else 1024
    ff = 2 * width
    heads = width // HEAD
    per_layer = 4 * (4 * width * width + 3 * width * ff + 2 * width)
    fixed = 4 * (2 * len(tokens) * width + width)
    layers = max(1, round((args.size_mb * 1024 * 1024 - fixed) / per_layer))
    random = np.random.default_rng(args.seed)

    def weights(rows, cols):
        return (random.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float32)

    ones = np.ones(width, dtype=np.float32)
    writer = gguf.GGUFWriter(args.out, "llama")
    writer.add_name(f"warden-test-llama-{layers}x{width}")
    writer.add_context_length(2048)
    writer.add_embedding_length(width)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(HEAD)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHATML)
    writer.add_tensor("token_embd.weight", weights(len(tokens), width))
    for i in range(layers):
        for name, rows, cols in (("attn_q", width, width), ("attn_k", width, width), ("attn_v", width, width),
                                 ("attn_output", width, width), ("ffn_gate", ff, width), ("ffn_up", ff, width),
                                 ("ffn_down", width, ff)):
            writer.add_tensor(f"blk.{i}.{name}.weight", weights(rows, cols))
        writer.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", ones)
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", weights(len(tokens), width))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{args.out}: {layers} layers of {width}, {len(tokens)} tokens", file=sys.stderr)


if __name__ == "__main__":
    main()
