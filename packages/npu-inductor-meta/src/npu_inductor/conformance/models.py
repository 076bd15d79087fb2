"""Tiny random-weight ``transformers`` models built from configs (no hub access), with inputs,
for compiled-on-npu vs eager comparisons: 2 layers, hidden 32, vocab 64.

Each ``ModelSpec`` builds the model on cpu (seeded) and makes inputs for a given "length": the
sequence length for text models, the batch size for vision models (their image size is fixed by
the config). Dropout is configured to 0 so that a training step is deterministic.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from npu_inductor_core import env_config as _env

VOCAB, HIDDEN, LAYERS, HEADS, FFN = 64, 32, 2, 2, 64


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    kind: str  # "decoder", "encoder", "encoder-decoder", "vision"
    build: Callable[[], object]  # -> nn.Module on cpu, eval mode
    inputs: Callable[[int], dict]  # length -> kwargs (cpu tensors, with labels)
    lengths: tuple[int, int]  # two lengths for the dynamic-shape check


def _offline():
    _env.setdefault("HF_HUB_OFFLINE", "1")  # configs only: nothing may come from the hub
    _env.setdefault("TRANSFORMERS_OFFLINE", "1")


def _seeded(make):
    def build():
        import torch

        _offline()
        torch.manual_seed(0)
        return make().eval()

    return build


def _text(length, batch=2, labels=True):
    import torch

    g = torch.Generator().manual_seed(length)
    ids = torch.randint(0, VOCAB, (batch, length), generator=g)
    out = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if labels:
        out["labels"] = torch.randint(0, VOCAB, (batch, length), generator=g)
    return out


def _decoder(config_cls, model_cls, **extra):
    def make():
        cfg = config_cls(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=FFN,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            num_key_value_heads=1,
            max_position_embeddings=64,
            attention_dropout=0.0,
            **extra,
        )
        return model_cls(cfg)

    return make


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(
        GPT2Config(
            vocab_size=VOCAB,
            n_embd=HIDDEN,
            n_layer=LAYERS,
            n_head=HEADS,
            n_positions=64,
            n_inner=FFN,
            bos_token_id=0,
            eos_token_id=0,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
        )
    )


def _opt():
    from transformers import OPTConfig, OPTForCausalLM

    return OPTForCausalLM(
        OPTConfig(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            word_embed_proj_dim=HIDDEN,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            ffn_dim=FFN,
            max_position_embeddings=64,
            dropout=0.0,
            attention_dropout=0.0,
            pad_token_id=1,
        )
    )


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    return _decoder(LlamaConfig, LlamaForCausalLM)()


def _mistral():
    from transformers import MistralConfig, MistralForCausalLM

    return _decoder(MistralConfig, MistralForCausalLM, sliding_window=None)()


def _qwen2():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    return _decoder(Qwen2Config, Qwen2ForCausalLM)()


def _bert():
    from transformers import BertConfig, BertForMaskedLM

    return BertForMaskedLM(
        BertConfig(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            intermediate_size=FFN,
            max_position_embeddings=64,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
    )


def _t5():
    from transformers import T5Config, T5ForConditionalGeneration

    return T5ForConditionalGeneration(
        T5Config(
            vocab_size=VOCAB,
            d_model=HIDDEN,
            d_kv=HIDDEN // HEADS,
            d_ff=FFN,
            num_layers=LAYERS,
            num_decoder_layers=LAYERS,
            num_heads=HEADS,
            dropout_rate=0.0,
            decoder_start_token_id=0,
            pad_token_id=0,
        )
    )


def _t5_inputs(length):
    d = _text(length)
    return d  # labels give the decoder its inputs (shifted right inside the model)


IMAGE = 16


def _vit():
    from transformers import ViTConfig, ViTForImageClassification

    return ViTForImageClassification(
        ViTConfig(
            image_size=IMAGE,
            patch_size=8,
            num_channels=3,
            hidden_size=HIDDEN,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            intermediate_size=FFN,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            num_labels=4,
        )
    )


def _resnet():
    from transformers import ResNetConfig, ResNetForImageClassification

    return ResNetForImageClassification(
        ResNetConfig(
            num_channels=3,
            embedding_size=8,
            hidden_sizes=[8, 16],
            depths=[1, 1],
            layer_type="basic",
            num_labels=4,
        )
    )


def _image(batch):
    import torch

    g = torch.Generator().manual_seed(batch)
    return {
        "pixel_values": torch.randn(batch, 3, IMAGE, IMAGE, generator=g),
        "labels": torch.randint(0, 4, (batch,), generator=g),
    }


SPECS = [
    ModelSpec("gpt2", "decoder", _seeded(_gpt2), _text, (8, 12)),
    ModelSpec("llama", "decoder", _seeded(_llama), _text, (8, 12)),
    ModelSpec("mistral", "decoder", _seeded(_mistral), _text, (8, 12)),
    ModelSpec("qwen2", "decoder", _seeded(_qwen2), _text, (8, 12)),
    ModelSpec("opt", "decoder", _seeded(_opt), _text, (8, 12)),
    ModelSpec("bert", "encoder", _seeded(_bert), _text, (8, 12)),
    ModelSpec("t5", "encoder-decoder", _seeded(_t5), _t5_inputs, (8, 12)),
    ModelSpec("vit", "vision", _seeded(_vit), _image, (2, 3)),
    ModelSpec("resnet", "vision", _seeded(_resnet), _image, (2, 3)),
]
BY_NAME = {s.name: s for s in SPECS}


def to_device(inputs: dict, device) -> dict:
    return {k: v.to(device) for k, v in inputs.items()}


def logits(out):
    return out.logits if hasattr(out, "logits") else out[0]
