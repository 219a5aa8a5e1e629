"""Which vocabulary path convert_hf_to_gguf.py takes for each architecture, at llama.cpp@0c1e57098.

``SUPPORTED`` is the converter's architecture registry as ``scripts/extract_tables.py llamacpp`` read it from that
commit's source (``indexer/engines/data/llamacpp/<commit>.json``, table ``converter_architectures``): the
architectures conversion/__init__.py TEXT_MODEL_MAP maps to a module whose ``@ModelBase.register(...)`` files a text
model class for them. Any other architecture makes convert_hf_to_gguf.py:251-255 print "Model X is not supported"
and exit 1, except the ones TEXT_MODEL_MAP names but whose module registers only a multimodal projector
(``MAPPED_UNREGISTERED``): ``get_model_class`` then raises KeyError (conversion/__init__.py:391-399).
``VOCAB_PATH`` maps the architectures whose ``set_vocab`` this indexer reproduces to that path, with the
file:line of each ``set_vocab`` on the class's MRO that decides it. It was read off the sources (the class
registered for the architecture in the module TEXT_MODEL_MAP names; the last registration wins): a
set_vocab whose body is exactly ``self._set_vocab_gpt2()`` (or none: TextModel.set_vocab, base.py:1403),
``self._set_vocab_sentencepiece()``, or ``try: sentencepiece / except FileNotFoundError: gpt2``;
LlamaModel (llama.py:106) and Phi3MiniModel (phi.py:44) have their own paths; the Qwen3 classes' InternS1
guard (qwen.py:203, :268) passes to the parent's. Architectures in SUPPORTED but not here are reported as
not modelled rather than guessed.
"""

import json
from pathlib import Path

from . import LLAMACPP_COMMIT


def _registry() -> dict:
    path = Path(__file__).resolve().parents[1] / "engines" / "data" / "llamacpp" / f"{LLAMACPP_COMMIT}.json"
    return json.loads(path.read_text(encoding="utf-8"))["tables"]


_TABLES = _registry()
SUPPORTED = frozenset(_TABLES["converter_architectures"]["values"])
MAPPED_UNREGISTERED = frozenset(_TABLES["mapped_not_registered"]["values"])

VOCAB_PATH: dict[str, tuple[str, str]] = {
    "AfmoeForCausalLM": ("llama", "conversion/llama.py:106 (AfmoeModel)"),
    "ApertusForCausalLM": ("llama", "conversion/llama.py:106 (ApertusModel)"),
    "ArceeForCausalLM": ("llama", "conversion/llama.py:106 (ArceeModel)"),
    "AudioFlamingo3ForConditionalGeneration": ("sentencepiece_or_gpt2", "conversion/qwen.py:60 (Qwen2Model)"),
    "BaiChuanForCausalLM": ("sentencepiece", "conversion/baichuan.py:16 (BaichuanModel)"),
    "BaichuanForCausalLM": ("sentencepiece", "conversion/baichuan.py:16 (BaichuanModel)"),
    "BailingMoeForCausalLM": ("gpt2", "conversion/bailingmoe.py:18 (BailingMoeModel)"),
    "BailingMoeV2ForCausalLM": ("gpt2", "conversion/bailingmoe.py:122 (BailingMoeV2Model)"),
    "BailingMoeV3ForCausalLM": ("gpt2", "conversion/bailingmoe3.py:38 (BailingMoeV3Model)"),
    "BailingMoeV3VLForConditionalGeneration": ("gpt2", "conversion/bailingmoe3.py:38 (BailingMoeV3VLModel)"),
    "BitNetForCausalLM": ("sentencepiece", "conversion/bitnet.py:16 (BitnetModel)"),
    "BitnetForCausalLM": ("sentencepiece", "conversion/bitnet.py:16 (BitnetModel)"),
    "BloomForCausalLM": ("gpt2", "conversion/base.py:1403 (BloomModel)"),
    "BloomModel": ("gpt2", "conversion/base.py:1403 (BloomModel)"),
    "ChameleonForCausalLM": ("gpt2", "conversion/chameleon.py:24 (ChameleonModel)"),
    "ChameleonForConditionalGeneration": ("gpt2", "conversion/chameleon.py:24 (ChameleonModel)"),
    "CodeShellForCausalLM": ("gpt2", "conversion/base.py:1403 (CodeShellModel)"),
    "CogVLMForCausalLM": ("llama", "conversion/llama.py:106 (CogVLMModel)"),
    "Cohere2ForCausalLM": ("gpt2", "conversion/base.py:1403 (Cohere2Model)"),
    "Cohere2MoeForCausalLM": ("gpt2", "conversion/base.py:1403 (Cohere2MoeModel)"),
    "CohereForCausalLM": ("gpt2", "conversion/base.py:1403 (CommandR2Model)"),
    "DbrxForCausalLM": ("gpt2", "conversion/base.py:1403 (DbrxModel)"),
    "DeepseekForCausalLM": ("sentencepiece_or_gpt2", "conversion/deepseek.py:144 (DeepseekModel)"),
    "DeepseekV4ForCausalLM": ("gpt2", "conversion/base.py:1403 (DeepseekV4Model)"),
    "Dots1ForCausalLM": ("gpt2", "conversion/base.py:1403 (Dots1Model)"),
    "DotsOCRForCausalLM": ("sentencepiece_or_gpt2", "conversion/qwen.py:60 (Qwen2Model)"),
    "DreamModel": ("sentencepiece_or_gpt2", "conversion/dream.py:53 (DreamModel)"),
    "Eagle3DraftModel": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "Eagle3LlamaForCausalLM": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "Eagle3Speculator": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "ExaoneForCausalLM": ("gpt2", "conversion/base.py:1403 (ExaoneModel)"),
    "FalconForCausalLM": ("gpt2", "conversion/base.py:1403 (FalconModel)"),
    "FalconH1ForCausalLM": ("gpt2", "conversion/falcon_h1.py:57 (FalconH1Model)"),
    "GPT2LMHeadModel": ("gpt2", "conversion/base.py:1403 (GPT2Model)"),
    "GPTBigCodeForCausalLM": ("gpt2", "conversion/base.py:1403 (StarCoderModel)"),
    "GPTNeoXForCausalLM": ("gpt2", "conversion/base.py:1403 (GPTNeoXModel)"),
    "GptOssForCausalLM": ("gpt2", "conversion/gpt_oss.py:125 (GptOssModel)"),
    "GraniteForCausalLM": ("llama", "conversion/llama.py:106 (GraniteModel)"),
    "GraniteMoeForCausalLM": ("llama", "conversion/llama.py:106 (GraniteMoeModel)"),
    "GraniteMoeSWAForCausalLM": ("llama", "conversion/llama.py:106 (GraniteMoeSWAModel)"),
    "GraniteMoeSharedForCausalLM": ("llama", "conversion/llama.py:106 (GraniteMoeModel)"),
    "GraniteSWAForCausalLM": ("llama", "conversion/llama.py:106 (GraniteSWAModel)"),
    "GraniteSwitchForCausalLM": ("llama", "conversion/llama.py:106 (GraniteSwitchModel)"),
    "GroveMoeForCausalLM": ("gpt2", "conversion/base.py:1403 (GroveMoeModel)"),
    "HYV3ForCausalLM": ("gpt2", "conversion/hunyuan.py:387 (HYV3Model)"),
    "HrmTextForCausalLM": ("gpt2", "conversion/hrm_text.py:32 (HrmTextModel)"),
    "IQuestCoderForCausalLM": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "JAISLMHeadModel": ("gpt2", "conversion/jais.py:59 (JaisModel)"),
    "Jais2ForCausalLM": ("gpt2", "conversion/base.py:1403 (Jais2Model)"),
    "JanusForConditionalGeneration": ("llama", "conversion/llama.py:106 (JanusProModel)"),
    "KORMoForCausalLM": ("sentencepiece_or_gpt2", "conversion/qwen.py:60 (Qwen2Model)"),
    "LFM2ForCausalLM": ("gpt2", "conversion/base.py:1403 (LFM2Model)"),
    "LLaDAMoEModel": ("gpt2", "conversion/base.py:1403 (LLaDAMoEModel)"),
    "LLaDAMoEModelLM": ("gpt2", "conversion/base.py:1403 (LLaDAMoEModel)"),
    "LLaMAForCausalLM": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "Lfm2BidirectionalModel": ("gpt2", "conversion/base.py:1403 (LFM2ColBertModel)"),
    "Lfm2ForCausalLM": ("gpt2", "conversion/base.py:1403 (LFM2Model)"),
    "Lfm2Model": ("gpt2", "conversion/base.py:1403 (LFM2ColBertModel)"),
    "Lfm2MoeForCausalLM": ("gpt2", "conversion/base.py:1403 (LFM2MoeModel)"),
    "Llama4ForCausalLM": ("gpt2", "conversion/llama.py:389 (Llama4Model)"),
    "Llama4ForConditionalGeneration": ("gpt2", "conversion/llama.py:389 (Llama4Model)"),
    "LlamaBidirectionalModel": ("llama", "conversion/llama.py:106 (LlamaEmbedNemotronModel)"),
    "LlamaForCausalLM": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "LlamaForCausalLMEagle3": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "LlamaModel": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "LlavaForConditionalGeneration": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "MaincoderForCausalLM": ("gpt2", "conversion/base.py:1403 (MaincoderModel)"),
    "MapleForCausalLM": ("gpt2", "conversion/base.py:1403 (MapleModel)"),
    "MellumForCausalLM": ("gpt2", "conversion/base.py:1403 (MellumModel)"),
    "MiMoV2FlashForCausalLM": ("gpt2", "conversion/base.py:1403 (MimoV2Model)"),
    "MiMoV2ForCausalLM": ("gpt2", "conversion/base.py:1403 (MimoV2Model)"),
    "MiniCPM3ForCausalLM": ("sentencepiece", "conversion/minicpm.py:102 (MiniCPM3Model)"),
    "MiniCPMForCausalLM": ("sentencepiece", "conversion/minicpm.py:48 (MiniCPMModel)"),
    "MiniCPMV4_6ForConditionalGeneration": ("gpt2", "conversion/base.py:1403 (MiniCPMV4_6TextModel)"),
    "MiniMaxM2ForCausalLM": ("gpt2", "conversion/base.py:1403 (MiniMaxM2Model)"),
    "MiniMaxM3SparseForCausalLM": ("gpt2", "conversion/base.py:1403 (MiniMaxM3Model)"),
    "MiniMaxM3SparseForConditionalGeneration": ("gpt2", "conversion/base.py:1403 (MiniMaxM3Model)"),
    "MistralForCausalLM": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "MixtralForCausalLM": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "NanbeigeForCausalLM": ("llama", "conversion/llama.py:106 (NanbeigeModel)"),
    "OLMoForCausalLM": ("gpt2", "conversion/base.py:1403 (OlmoModel)"),
    "Olmo2ForCausalLM": ("gpt2", "conversion/base.py:1403 (Olmo2Model)"),
    "Olmo3ForCausalLM": ("gpt2", "conversion/base.py:1403 (Olmo2Model)"),
    "OlmoForCausalLM": ("gpt2", "conversion/base.py:1403 (OlmoModel)"),
    "OlmoeForCausalLM": ("gpt2", "conversion/base.py:1403 (OlmoeModel)"),
    "OrionForCausalLM": ("sentencepiece", "conversion/orion.py:11 (OrionModel)"),
    "PLMForCausalLM": ("gpt2", "conversion/plm.py:11 (PLMModel)"),
    "Phi3ForCausalLM": ("phi3", "conversion/phi.py:44 (Phi3MiniModel)"),
    "Phi4ForCausalLMV": ("phi3", "conversion/phi.py:44 (Phi3MiniModel)"),
    "PhiForCausalLM": ("gpt2", "conversion/base.py:1403 (Phi2Model)"),
    "PhiMoEForCausalLM": ("phi3", "conversion/phi.py:44 (PhiMoeModel)"),
    "PlamoForCausalLM": ("sentencepiece", "conversion/plamo.py:20 (PlamoModel)"),
    "Qwen2AudioForConditionalGeneration": ("sentencepiece_or_gpt2", "conversion/qwen.py:60 (Qwen2Model)"),
    "Qwen2ForCausalLM": ("sentencepiece_or_gpt2", "conversion/qwen.py:60 (Qwen2Model)"),
    "Qwen2Model": ("sentencepiece_or_gpt2", "conversion/qwen.py:60 (Qwen2Model)"),
    "Qwen2MoeForCausalLM": ("gpt2", "conversion/base.py:1403 (Qwen2MoeModel)"),
    "Qwen2VLForConditionalGeneration": ("sentencepiece_or_gpt2", "conversion/qwenvl.py:27 (Qwen2VLModel)"),
    "Qwen2VLModel": ("sentencepiece_or_gpt2", "conversion/qwenvl.py:27 (Qwen2VLModel)"),
    "Qwen2_5OmniModel": ("sentencepiece_or_gpt2", "conversion/qwenvl.py:27 (Qwen2VLModel)"),
    "Qwen2_5_VLForConditionalGeneration": ("sentencepiece_or_gpt2", "conversion/qwenvl.py:27 (Qwen2VLModel)"),
    "Qwen3ForCausalLM": ("sentencepiece_or_gpt2", "conversion/qwen.py:203 -> conversion/qwen.py:60 (Qwen3Model)"),
    "Qwen3Model": ("sentencepiece_or_gpt2", "conversion/qwen.py:203 -> conversion/qwen.py:60 (Qwen3Model)"),
    "Qwen3MoeForCausalLM": ("gpt2", "conversion/qwen.py:268 -> conversion/base.py:1403 (Qwen3MoeModel)"),
    "Qwen3NextForCausalLM": ("gpt2", "conversion/base.py:1403 (Qwen3NextModel)"),
    "Qwen3VLForConditionalGeneration": (
        "sentencepiece_or_gpt2", "conversion/qwen.py:203 -> conversion/qwen.py:60 (Qwen3VLTextModel)"
    ),
    "Qwen3VLMoeForConditionalGeneration": (
        "gpt2", "conversion/qwen.py:268 -> conversion/base.py:1403 (Qwen3VLMoeTextModel)"
    ),
    "Qwen3_5ForCausalLM": ("gpt2", "conversion/base.py:1403 (Qwen3_5TextModel)"),
    "Qwen3_5ForConditionalGeneration": ("gpt2", "conversion/base.py:1403 (Qwen3_5TextModel)"),
    "Qwen3_5MoeForCausalLM": ("gpt2", "conversion/base.py:1403 (Qwen3_5MoeTextModel)"),
    "Qwen3_5MoeForConditionalGeneration": ("gpt2", "conversion/base.py:1403 (Qwen3_5MoeTextModel)"),
    "Qwen4ExpForCausalLM": ("gpt2", "conversion/base.py:1403 (Qwen4ExpTextModel)"),
    "Qwen4ExpForConditionalGeneration": ("gpt2", "conversion/base.py:1403 (Qwen4ExpTextModel)"),
    "RND1": ("gpt2", "conversion/base.py:1403 (RND1Model)"),
    "RWForCausalLM": ("gpt2", "conversion/base.py:1403 (FalconModel)"),
    "RWKV6Qwen2ForCausalLM": ("sentencepiece_or_gpt2", "conversion/rwkv.py:91 (RWKV6Qwen2Model)"),
    "RuGPT3XLForCausalLM": ("gpt2", "conversion/base.py:1403 (RuGPT3XLModel)"),
    "RwkvHybridForCausalLM": ("sentencepiece_or_gpt2", "conversion/rwkv.py:271 (ARwkv7Model)"),
    "Sarashina2VisionForCausalLM": ("llama", "conversion/llama.py:106 (Sarashina2VLTextModel)"),
    "SarvamMoEForCausalLM": ("gpt2", "conversion/bailingmoe.py:122 (SarvamMoEModel)"),
    "SeedOssForCausalLM": ("gpt2", "conversion/base.py:1403 (SeedOssModel)"),
    "SmallThinkerForCausalLM": ("gpt2", "conversion/base.py:1403 (SmallThinkerModel)"),
    "SmolLM3ForCausalLM": ("llama", "conversion/llama.py:106 (SmolLM3Model)"),
    "Spark2_5ForCausalLM": ("gpt2", "conversion/base.py:1403 (Spark2_5Model)"),
    "Starcoder2ForCausalLM": ("gpt2", "conversion/base.py:1403 (StarCoder2Model)"),
    "Step3p5ForCausalLM": ("gpt2", "conversion/base.py:1403 (Step35Model)"),
    "Step3p7ForConditionalGeneration": ("gpt2", "conversion/base.py:1403 (Step35Model)"),
    "StepVLForConditionalGeneration": (
        "sentencepiece_or_gpt2", "conversion/qwen.py:203 -> conversion/qwen.py:60 (Step3VLTextModel)"
    ),
    "TalkieForCausalLM": ("gpt2", "conversion/base.py:1403 (TalkieModel)"),
    "UltravoxModel": ("gpt2", "conversion/base.py:1403 (UltravoxModel)"),
    "VLlama3ForCausalLM": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "VoxtralForConditionalGeneration": ("llama", "conversion/llama.py:106 (LlamaModel)"),
    "modeling_grove_moe.GroveMoeForCausalLM": ("gpt2", "conversion/base.py:1403 (GroveMoeModel)"),
    "modeling_sarvam_moe.SarvamMoEForCausalLM": ("gpt2", "conversion/bailingmoe.py:122 (SarvamMoEModel)"),
}
# set_vocab first hands InternS1 checkpoints to _set_vocab_interns1 (qwen.py:203-209, 268-274)
INTERNS1_GUARDED = frozenset({
    "Qwen3ForCausalLM",
    "Qwen3Model",
    "Qwen3MoeForCausalLM",
    "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "StepVLForConditionalGeneration",
})

# Read by hand: set_vocab bodies that add only keys the draft check does not read (FIM ids, add_space_prefix).
VOCAB_PATH.update({
    "GemmaForCausalLM": ("sentencepiece", "conversion/gemma.py:23-37 (GemmaModel)"),
    "Gemma2ForCausalLM": ("sentencepiece", "conversion/gemma.py:79-82 (Gemma2Model)"),
    # tokenizer.model present -> SentencePiece, else GPT-2 BPE (an is_file test, same outcome as the try/except)
    "Gemma3ForCausalLM": ("sentencepiece_or_gpt2", "conversion/gemma.py:134-139 (Gemma3Model)"),
    "Gemma3ForConditionalGeneration": ("sentencepiece_or_gpt2", "conversion/gemma.py:134-139 (Gemma3Model)"),
})
VOCAB_PATH.update({
    **{a: ("bert", "conversion/bert.py:40-67 (BertModel)") for a in (
        "BertModel", "BertForMaskedLM", "CamembertModel", "BertForSequenceClassification",  # bert.py:17
        "DistilBertModel", "DistilBertForMaskedLM", "DistilBertForSequenceClassification",  # bert.py:243
    )},
    **{a: ("t5", "conversion/t5.py:27-119 (T5Model, T5EncoderModel: same body at t5.py:165)") for a in (
        "T5WithLMHeadModel", "T5ForConditionalGeneration", "MT5ForConditionalGeneration",
        "UMT5ForConditionalGeneration", "UMT5Model", "T5EncoderModel",
    )},
})
VOCAB_PATH.update({
    **{a: ("deepseek", "conversion/deepseek.py:265-316 (DeepseekV2Model)") for a in (
        "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekOCRForCausalLM", "UnlimitedOCRForCausalLM",
        "KimiVLForConditionalGeneration", "KimiK25ForConditionalGeneration", "YoutuForCausalLM",
        "YoutuVLForConditionalGeneration", "HYV4ForCausalLM",
    )},
    # exaone.py:68-76 is _set_vocab_gpt2 written out
    **{a: ("gpt2", "conversion/exaone.py:68-76 (Exaone4Model)") for a in (
        "Exaone4ForCausalLM", "ExaoneMoEForCausalLM", "ExaoneMoeForCausalLM", "Exaone4_5_ForConditionalGeneration",
    )},
    "NemotronForCausalLM": ("sentencepiece", "conversion/nemotron.py:160-163 (NemotronModel; pad/unk ids only)"),
    **{a: ("stablelm", "conversion/stablelm.py:18-23 (StableLMModel)") for a in (
        "StableLmForCausalLM", "StableLMEpochForCausalLM", "LlavaStableLMEpochForCausalLM",
    )},
    "MPTForCausalLM": ("mpt", "conversion/mpt.py:16-25 (MPTModel)"),
})
VOCAB_PATH.update({
    a: ("mistral3", "conversion/mistral3.py:14-51 (Mistral3Model -> LlamaModel or DeepseekV2Model)")
    for a in ("Mistral3ForConditionalGeneration", "Ministral3ForCausalLM")
})
VOCAB_PATH["InternLM2ForCausalLM"] = ("internlm2", "conversion/internlm.py:21-144 (InternLM2Model)")

# State-space and hybrid models: each class reads config.json itself (no AutoConfig) and pads vocab_size.
VOCAB_PATH.update({
    **{a: ("mamba", "conversion/mamba.py:16-44 (MambaModel)") for a in (
        "MambaForCausalLM", "MambaLMHeadModel", "FalconMambaForCausalLM",
    )},
    "Mamba2ForCausalLM": ("mamba2", "conversion/mamba.py:103-141 (Mamba2Model)"),
    **{a: ("granite_hybrid", "conversion/granite.py:391-531 -> conversion/mamba.py:123-141 (GraniteHybridModel)")
       for a in ("GraniteMoeHybridForCausalLM", "BambaForCausalLM")},
    # NemotronHPuzzleModel (nemotron.py:514) inherits NemotronHModel.set_vocab
    **{a: ("nemotron_h", "conversion/nemotron.py:367-425 (NemotronHModel)") for a in (
        "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    )},
    "JambaForCausalLM": ("jamba", "conversion/jamba.py:18-23 (JambaModel)"),
    **{a: ("gemma3n", "conversion/gemma.py:486-530 -> conversion/gemma.py:134-139 (Gemma3NModel)") for a in (
        "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration",
    )},
    # Gemma4UnifiedModel (gemma.py:914) and Gemma4AssistantModel (gemma.py:935) inherit Gemma4Model.set_vocab
    **{a: ("gemma4", "conversion/gemma.py:641-669 (Gemma4Model)") for a in (
        "Gemma4ForConditionalGeneration", "Gemma4ForCausalLM", "Gemma4UnifiedForConditionalGeneration",
        "Gemma4AssistantForCausalLM", "Gemma4UnifiedAssistantForCausalLM",
    )},
})
# GLM: get_vocab_base plus special ids by added-token name
VOCAB_PATH.update({
    **{a: ("glm", "conversion/base.py:2350-2365 (_set_vocab_glm: Glm4MoeModel glm.py:148, Glm4MoeLiteModel :255, "
                  "GlmMoeDsaModel :362, Glm5NextModel :429)") for a in (
        "Glm4MoeForCausalLM", "Glm4vMoeForConditionalGeneration", "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM",
        "Glm5NextForConditionalGeneration",
    )},
    **{a: ("glm4", "conversion/glm.py:17-45 (Glm4Model)")
       for a in ("Glm4ForCausalLM", "Glm4vForConditionalGeneration")},
})
