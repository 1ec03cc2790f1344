"""The models domain: what builds a model, what its forward returns, and what keeps it the same object.

A value is a model because it is built as one (`from_pretrained` of a transformers / TRL / PEFT model
class, an instance of an `nn.Module` subclass of the project, `deepcopy` of a model, TRL's
`create_reference_model`, PEFT's `get_peft_model`), and each model object has an identity (`model`: the
node that built it), so that facts about it (frozen, trained by an optimizer) found anywhere in the file
apply to every name that holds it. The class a pretrained model is loaded with gives its architecture
(`arch`), and the architecture the shape of its outputs: a causal language model's `logits` are
`[batch, time, vocab]`.

A forward runs with gradient when gradient is enabled there and the model is not frozen; under
`no_grad` its output has none; a frozen model's output has what its inputs have. A module that holds no
parameters (`weightless`: a loss written as an `nn.Module`) is not a model's forward: its call computes
what its `forward` does, like a function's.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import libcst as cst

from rllint.analysis.domains.base import Domain
from rllint.analysis.sides import sides_set
from rllint.analysis.domains.torch_ops import OPS, Operands, gradient, raw_logits, tensor_result
from rllint.analysis.facts import (BATCH, CAUSAL_LM, DEFAULT_SIDE, EOS, GRAPH, IDS, INSTANCE, LOG_SPACE, LOGITS, MODEL,
                                   NLL, NO_GRAD, NUMBER, OPTIMIZER, OUTPUT, PARAMS, SEQ2SEQ, SEQ_CLS, SIDES, TENSOR, TIME,
                                   TEXT, TOKENIZER, TUPLE, UNKNOWN, VALUE_HEAD, VOCAB, Value, item_of, join_all,
                                   value, with_sources)

# Methods that return the model they are called on (or the same parameters).
SAME_MODEL = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float", "bfloat16", "requires_grad_"})
# Methods every `nn.Module` has, which this domain interprets on a model of a project class that does not
# define them.
MODULE_METHODS = SAME_MODEL | {"parameters", "named_parameters"}
# Methods a transformers model class (`PreTrainedModel`, its `GenerationMixin`) gives a project subclass that does
# not define them.
PRETRAINED_METHODS = frozenset({"generate"})
# Attributes that unwrap a wrapper around the same model (DDP's `module`, PEFT's `base_model`).
UNWRAP = frozenset({"module", "base_model", "pretrained_model", "_orig_mod"})
OPTIMIZERS = frozenset({"Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adafactor", "Lion", "AdamW8bit", "Adam8bit",
                        "PagedAdamW", "PagedAdamW8bit", "PagedAdamW32bit", "FusedAdam", "DeepSpeedCPUAdam", "Muon"})
WRAPPERS = frozenset({"DistributedDataParallel", "DataParallel", "FullyShardedDataParallel", "DDP", "FSDP",
                      "compile"})
PRETRAINED = ("from_pretrained", "from_config")  # transformers' loaders, inherited by a model class
# verl's `hf_tokenizer(path, **kwargs)`: `AutoTokenizer.from_pretrained(path, **kwargs)`, then its pad token set
_VERL_TOKENIZERS = frozenset({"verl.utils.hf_tokenizer", "verl.utils.tokenizer.hf_tokenizer"})
ADAPTER = "adapter"  # the settings of a PEFT adapter (`LoraConfig(...)`): `items`, its keyword arguments
QUANTIZER = "quantizer"  # a transformers quantization config (`BitsAndBytesConfig(load_in_4bit=True)`): `bits`
# The transformers quantization configs: each one loads the weights quantized.
_QUANTIZERS = frozenset({"BitsAndBytesConfig", "GPTQConfig", "AwqConfig", "HqqConfig", "QuantoConfig", "EetqConfig",
                         "AqlmConfig", "TorchAoConfig", "FbgemmFp8Config", "CompressedTensorsConfig", "HiggsConfig",
                         "BitNetConfig", "VptqConfig", "SpQRConfig", "FineGrainedFP8Config", "QuarkConfig"})
# What a `from_pretrained` load says of the weights it gives (`loads`, each key's setting a Value): the checkpoint
# they are read from, its revision, the dtype they are cast to, and their quantization (bits; 0: none).
CHECKPOINT, REVISION, DTYPE, QUANTIZATION = "checkpoint", "revision", "dtype", "quantization"
QUANTIZED = "quantized"  # a quantization setting whose bits are not known
_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "half": "float16", "float32": "float32", "float": "float32",
           "float64": "float64", "double": "float64"}
# Methods of a model that cast its weights to one dtype.
_CASTS = {"half": "float16", "bfloat16": "bfloat16", "float": "float32", "double": "float64"}
ACCELERATOR = "accelerator"  # an `accelerate.Accelerator`
# mlx_lm's loaders, which give `(model, tokenizer)`; a `Model` class of `mlx_lm.models.<family>` builds one. Every
# mlx_lm model is a language model whose call returns its logits array itself (no output object).
_MLX_LOADS = frozenset({"mlx_lm.load", "mlx_lm.utils.load"})
MLX = "mlx"  # the `library` of a model whose arrays are MLX's: its gradient is taken by `value_and_grad`, not recorded


def architecture(cls: str) -> Optional[str]:
    """The architecture a transformers / TRL class name documents; None for a base model or another class."""
    if "WithValueHead" in cls:
        return VALUE_HEAD
    if "CausalLM" in cls or "LMHeadModel" in cls:
        return CAUSAL_LM
    if "SequenceClassification" in cls or "TokenClassification" in cls:
        return SEQ_CLS
    if "Seq2SeqLM" in cls or "ConditionalGeneration" in cls:
        return SEQ2SEQ
    return None


def is_model_class(cls: str) -> bool:
    return "Model" in cls and not cls.endswith(("Config", "Tokenizer", "Processor", "Output"))


class Models(Domain):
    def call(self, frame, qual, node, args, kwargs):
        owner, _, tail = qual.rpartition(".")
        first = args[0] if args else None
        if qual in _VERL_TOKENIZERS:
            return loaded_tokenizer(frame, node, kwargs)
        if qual == "accelerate.Accelerator":  # its `prepare` hands back the models it is given
            return value((node,), type=ACCELERATOR)
        if qual in _MLX_LOADS or qual.startswith("mlx_lm.models.") and tail == "Model":
            return _mlx_load(frame, node, kwargs, tail == "Model")
        if qual.startswith("peft.") and tail == "LoraConfig":  # its settings, for the model it adapts
            return Value({"type": ADAPTER, "items": tuple(kwargs.items())}, {"type": (node,)})
        if qual.startswith("transformers.") and tail in _QUANTIZERS:
            return Value({"type": QUANTIZER, **_bits(tail, kwargs)}, {"type": (node,)})
        if qual.startswith("peft.") and tail == "get_peft_model":
            settings = args[1] if len(args) > 1 else kwargs.get("peft_config")
            if settings is not None and settings.facts.get("type") == ADAPTER:  # PEFT's default dropout is 0
                p = item_of(settings, "lora_dropout") or value((node,), type=NUMBER, number=0.0, origin="literal")
                frame.emit("dropout", node, first or UNKNOWN, "lora_dropout", p=p)
        if qual.startswith("peft.") and tail == "from_pretrained" and first is not None and \
                first.facts.get("type") == MODEL:  # `PeftModel.from_pretrained(base, adapter)` wraps the base model
            return first.but(lora=True, why={"lora": (node,)})
        if tail in PRETRAINED:
            cls = owner.rsplit(".", 1)[-1]
            if "Tokenizer" in cls or cls.endswith("Processor"):
                return loaded_tokenizer(frame, node, kwargs)
            if not is_model_class(cls):
                return None
            arch = architecture(cls)
            facts = {"type": MODEL, "model": node, **({"arch": arch} if arch else {})}
            if tail == "from_pretrained":
                facts["pretrained"] = True
            why = {k: (node,) for k in facts if k != "type"}
            # what the arguments mean (and what a missing one defaults to) is known of transformers' loader, which TRL's
            # classes call with what they are given; another library's (unsloth's, a project's) may differ
            documented = tail == "from_pretrained" and qual.split(".", 1)[0] in ("transformers", "trl")
            loads = load_settings(frame, node, args, kwargs) if documented else ()
            if loads:
                facts["loads"], why["loads"] = loads, (node,)
            return Value(facts, why)
        cls = first.facts.get("cls") if first is not None and first.facts.get("type") == INSTANCE else None
        if qual in ("copy.deepcopy", "deepcopy") and cls is not None and cls.module.flow.is_module_class(cls):
            return Value({"type": MODEL, "model": node, "cls": cls}, {"model": (node,)})  # `deepcopy(self)`
        if first is None or first.facts.get("type") != MODEL:
            if tail in OPTIMIZERS:
                return value((node,), type=OPTIMIZER)
            return None
        if qual in ("copy.deepcopy", "deepcopy"):
            return first.but(model=node, frozen=None, why={"model": (node,)})
        if tail == "create_reference_model":  # TRL freezes the copy it makes
            return first.but(model=node, frozen=True, why={"model": (node,), "frozen": (node,)})
        if tail == "get_peft_model":
            return first.but(lora=True, why={"lora": (node,)})
        if tail in WRAPPERS:
            return first
        return None

    def method(self, frame, receiver, name, node, args, kwargs):
        if receiver.facts.get("type") != MODEL:
            if name == "prepare" and args and any(a.facts.get("type") == MODEL for a in args):
                # `accelerator.prepare(model, optimizer, ...)` hands back the same objects, in order
                items = tuple((i, a) for i, a in enumerate(args))
                return args[0] if len(args) == 1 else Value({"type": TUPLE, "items": items})
            return None
        if name in SAME_MODEL:
            return cast(receiver, name, node, args, kwargs)
        if name == "merge_and_unload" and receiver.facts.get("lora"):  # PEFT: the base model, its adapters merged
            return receiver.but(lora=None)
        if name == "generate":
            frame.emit("generate", node, _prompt_ids(frame, node, args, kwargs), "generate", model=receiver)
            # the sampler call is in the ids' sources: ids joined with another path's still hold what it drew
            ids = Value({"type": TENSOR, "rank": 2, "axes": (BATCH, TIME), "content": IDS, "sampled": True,
                         "grad": NO_GRAD, "obj": node, "sources": frozenset({node})},
                        {"rank": (node,), "content": (node,), "sampled": (node,), "grad": (node,)})
            returned = kwargs.get("return_dict_in_generate")
            if returned is None or not returned.facts.get("number"):
                return ids
            return generated(node, ids, kwargs)
        if name in ("parameters", "named_parameters"):
            return value((node,), type=PARAMS).but(model=receiver.facts.get("model"))
        if name == "forward":
            return self.forward(frame, receiver, node, args, kwargs)
        return None

    def attribute(self, frame, base, attr, node):
        kind = base.facts.get("type")
        if kind == MODEL and attr in UNWRAP:
            return base
        if kind == MODEL and attr in ("config", "generation_config"):
            return value((node,), token_ids=True)
        if (kind == TOKENIZER or base.facts.get("token_ids")) and attr == "eos_token_id":
            return value((node,), special=EOS)
        if kind == OUTPUT and base.facts.get("generated"):
            return dict(base.facts.get("items") or ()).get(attr, UNKNOWN)
        if kind == OUTPUT:
            if base.facts.get("arch") is None and attr in OPS:
                return None  # a tensor method of what a model of unknown class returned (`torch_ops`)
            return output_field(base, attr, node)
        return None

    def subscript(self, frame, base, node):
        if base.facts.get("type") != OUTPUT:
            return None
        key = frame.constant_key(node)
        if isinstance(key, int):
            return output_item(base, key, node)
        if isinstance(key, str):
            return output_field(base, key, node)
        return None

    def _layer(self, frame, layer: Value, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]) -> Value:
        """A layer that trains here records a graph; one without weights, or frozen here, gives what its inputs
        have. Any other layer's weights require gradient unless code out of sight (the model that holds it)
        freezes them: whether its output has a graph is unknown, whatever cut its inputs went through."""
        kind = layer.facts["layer"]
        if frame.mode is not False and (layer.facts.get("trains") or frame.flow.trained(layer)):
            return Value({"type": TENSOR, "obj": node, "grad": GRAPH, "forwards": frozenset({node}),
                          **_layer_facts(kind, args)}, {"grad": (node,)})
        result = tensor_result(Operands(None, list(args) + list(kwargs.values()), {}, node, frame.mode,
                                        lambda position, keyword: None), **_layer_facts(kind, args))
        if frame.mode is False or _weightless(kind) or result.facts.get("grad") == GRAPH or \
                frame.flow.frozen(layer):
            return result
        return frame.opaque(node, result.but(grad=None))

    def call_value(self, frame, callee, node, args, kwargs):
        if callee.facts.get("type") != MODEL:
            return None
        return self.forward(frame, callee, node, args, kwargs)

    def forward(self, frame, model: Value, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]) -> Value:
        """A model's forward: a project module runs its own `forward` (one of several: each); a pretrained one
        gives an output whose fields follow its architecture. Either way the gradient follows from the mode and the model. A layer
        of `torch.nn` is part of a model: its output is a tensor whose gradient follows its inputs (the model
        that holds it decides the rest), or that carries a graph when the layer itself trains."""
        if model.facts.get("layer"):
            return self._layer(frame, model, node, args, kwargs)
        if "candidates" in model.facts:  # one of several project modules (a factory's): what any of them computes
            return join_all(self.forward(frame, option, node, args, kwargs) for option in model.facts["candidates"])
        if model.facts.get("library") == MLX:  # its logits; whether they carry gradient is value_and_grad's
            logits = Value({"type": TENSOR, "obj": node, "rank": 3, "axes": (BATCH, TIME, VOCAB), "content": LOGITS,
                            "dist": 2, "temperature": raw_logits(node), "forward_output": node},
                           {k: (node,) for k in ("rank", "content", "temperature")})
            frame.forward(node, model, args, kwargs, logits)
            return logits
        result = frame.run_method(model, "forward", node, args, kwargs)
        if result is not None and model.facts.get("weightless"):
            return result  # no parameters of its own (a loss written as a module): what its forward computes
        if result is not None and not result.facts.get("type"):
            result = result.but(type=TENSOR)  # what a module's forward returns is a tensor, its shape unknown
        if result is None:
            result = value(model.reason("arch") or (node,), type=OUTPUT, arch=model.facts.get("arch"))
            if "labels" in kwargs:  # its `.loss` is the labels' mean negative log-likelihood
                result = result.but(labelled=True)
        if result.facts.get("type") == TENSOR or result.facts.get("type") == OUTPUT and "arch" not in result.facts:
            result = result.but(forward_output=node)  # the model's own output, read as a tensor
        frame.forward(node, model, args, kwargs, result)
        if frame.mode is False:
            return result.but(grad=NO_GRAD, cut=node, why={"grad": (node,)})
        frozen = frame.flow.frozen(model) if frame.mode else None
        if frozen is False:
            return result.but(grad=GRAPH, forwards=frozenset({node}), why={"grad": (node,)})
        if frozen:
            grad, why, _ = gradient(_float_inputs(model, args, kwargs), frame.mode, node)
            if grad is not None:
                return result.but(grad=grad, why={"grad": why})
        # whether this forward records a graph is unknown: what it makes may carry gradient out of sight
        return frame.opaque(node, result.but(grad=None))


def _mlx_load(frame, node: cst.Call, kwargs: Dict[str, Value], built: bool) -> Optional[Value]:
    """An mlx_lm language model built (`built`) or loaded with its tokenizer; None when `return_config=` may add a
    third item."""
    model = Value({"type": MODEL, "model": node, "arch": CAUSAL_LM, "library": MLX},
                  {"model": (node,), "arch": (node,), "library": (node,)})
    if built:
        return model
    if "return_config" in kwargs or any(arg.star for arg in node.args):
        return None
    return Value({"type": TUPLE, "items": ((0, model), (1, loaded_tokenizer(frame, node, kwargs)))}, {"type": (node,)})


def load_settings(frame, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]
                  ) -> Tuple[Tuple[str, Value], ...]:
    """What `from_pretrained` is told about the weights it loads, as the engine resolves each argument (a literal,
    a constant, an argparse or dataclass default, a YAML key, a launch flag): `(key, setting)` pairs, a setting being
    a Value whose `setting` is comparable (the checkpoint's text, a dtype's name, the bits of a quantization, 0 for
    none) and whose provenance is where it is written. A keyword the call does not give holds the library's default
    (revision "main", no quantization) unless a `**mapping` whose keys are not all known may give it; the dtype's
    default depends on the release, and a setting the engine cannot resolve is left out: not known."""
    mappings = frame.open_mappings.get(node, ())

    def given(name: str) -> Optional[Value]:
        if name in kwargs:
            return kwargs[name]
        return next((found for held in mappings for found in [item_of(held, name)] if found is not None), None)

    closed = not mappings  # no keyword the code does not show
    settings: List[Tuple[str, Value]] = []

    def add(key: str, chosen: Any, held: Optional[Value]) -> None:
        if chosen is None:
            return
        where = next((held.reason(f) for f in ("literal", "number", "qual", "type") if held is not None and
                      held.reason(f)), ()) or (node,)
        origin = held.facts.get("origin") if held is not None else None
        settings.append((key, Value({"setting": chosen, **({"origin": origin} if origin else {})}, {"setting": where})))

    checkpoint = args[0] if args else given("pretrained_model_name_or_path")
    if checkpoint is not None and isinstance(checkpoint.facts.get("literal"), str):
        add(CHECKPOINT, checkpoint.facts["literal"].rstrip("/") or "/", checkpoint)
    revision = given("revision")
    if revision is None:
        add(REVISION, "main" if closed else None, None)
    elif isinstance(revision.facts.get("literal"), str) or revision.facts.get("type") == "none":
        add(REVISION, revision.facts.get("literal") or "main", revision)
    dtype = given("torch_dtype") or given("dtype")
    if dtype is not None:
        add(DTYPE, dtype_name(dtype), dtype)
    add(QUANTIZATION, *_quantization(given, closed))
    return tuple(settings)


def dtype_name(held: Value) -> Optional[str]:
    """The dtype a value names (`torch.bfloat16`, `"bfloat16"`); None for `"auto"` (the checkpoint's own) or a
    value the engine does not know."""
    qual = held.facts.get("qual") if held.facts.get("type") == "ref" else None
    if isinstance(qual, str) and qual.startswith("torch."):
        return _DTYPES.get(qual[len("torch."):])
    text = held.facts.get("literal")
    return _DTYPES.get(text.removeprefix("torch.")) if isinstance(text, str) else None


def _quantization(given, closed: bool) -> Tuple[Any, Optional[Value]]:
    """The bits the weights are loaded in (0: not quantized; QUANTIZED: some, how many not known) and the value
    that says so: `quantization_config=` a config of transformers or None, `load_in_4bit=` / `load_in_8bit=`."""
    config = given("quantization_config")
    flags = [(bits, given(f"load_in_{bits}bit")) for bits in (4, 8)]
    for bits, flag in flags:
        if flag is not None and flag.facts.get("number") == 1.0:
            return bits, flag
    if any(flag is not None and flag.facts.get("number") != 0.0 for _, flag in flags):
        return None, None  # a flag whose value is not known
    if config is not None:
        kind = config.facts.get("type")
        if kind == QUANTIZER:
            return config.facts.get("bits", QUANTIZED), config
        return (0, config) if kind == "none" else (None, None)
    return (0, None) if closed else (None, None)


def _bits(tail: str, kwargs: Dict[str, Value]) -> Dict[str, Any]:
    """The bits a quantization config of transformers loads weights in, where its keywords say."""
    if tail == "BitsAndBytesConfig":
        for bits in (4, 8):
            flag = kwargs.get(f"load_in_{bits}bit")
            if flag is not None and flag.facts.get("number") == 1.0:
                return {"bits": bits}
        return {}
    number = kwargs["bits"].facts.get("number") if "bits" in kwargs else None
    return {"bits": int(number)} if isinstance(number, float) and number.is_integer() else {}


def cast(model: Value, name: str, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]) -> Value:
    """A model after a method that returns it: `.half()` / `.bfloat16()` / `.float()` cast its weights, and so does
    `.to(dtype)`; a `.to(...)` given something the engine does not know may cast them too."""
    loads = model.facts.get("loads")
    if not loads:
        return model
    if name in _CASTS:
        chosen: Optional[str] = _CASTS[name]
    elif name == "to":
        given = list(args) + [kwargs[k] for k in ("dtype",) if k in kwargs]
        named = [dtype_name(v) for v in given if v.facts.get("type") == "ref"]
        if any(named):
            chosen = next(n for n in named if n)
        elif all(v.facts.get("type") == TEXT or v.facts.get("type") == "ref" for v in given) and \
                set(kwargs) <= {"device", "non_blocking"}:
            return model  # a device
        else:
            chosen = None
    else:
        return model
    kept = tuple((key, held) for key, held in loads if key != DTYPE)
    if chosen is not None:
        kept += ((DTYPE, Value({"setting": chosen}, {"setting": (node,)})),)
    return model.but(loads=kept)


def differences(policy: Value, reference: Value, keys: Tuple[str, ...] = (CHECKPOINT, REVISION, QUANTIZATION, DTYPE)
                ) -> List[Tuple[str, Value, Value]]:
    """The load settings both models are known to have and in which they differ (`loads`), in the order of
    `keys`: each as (key, the policy's setting, the reference's). A quantization of unknown bits differs only from
    none."""
    mine, theirs = dict(policy.facts.get("loads") or ()), dict(reference.facts.get("loads") or ())
    found = []
    for key in keys:
        if key not in mine or key not in theirs:
            continue
        a, b = mine[key].facts["setting"], theirs[key].facts["setting"]
        if a == b or key == QUANTIZATION and QUANTIZED in (a, b) and 0 not in (a, b):
            continue
        found.append((key, mine[key], theirs[key]))
    return found


def loaded_tokenizer(frame, node: cst.Call, kwargs: Dict[str, Value]) -> Value:
    """A tokenizer `from_pretrained` loads, with the sides it pads and truncates on: the one its keyword writes, or
    the checkpoint's default when it is given none, no `**kwargs` may give one, and the module that loads it sets
    no side but "right" on any tokenizer (a helper there may set this one's under another name)."""
    facts: Dict = {"type": TOKENIZER}
    if not any(arg.star == "**" for arg in node.args):
        chosen = sides_set(frame.flow.file)
        for side in SIDES:
            if side in kwargs:
                facts[side] = written_text(kwargs[side])
            elif not chosen[side] - {"right"}:
                facts[side] = DEFAULT_SIDE
    return value((node,), **facts)


def sides_it_sets(file) -> Tuple[str, ...]:
    """The sides a module sets to something but "right" on some tokenizer: a tokenizer handed to it may leave with
    those configured."""
    return tuple(side for side, values in sides_set(file).items() if values - {"right"})


def configured(tokenizer: Value, stores: Dict[str, Value]) -> Value:
    """A tokenizer after the code set its sides (`tok.padding_side = "left"`): the side written, or not known when
    what is stored is not a string literal."""
    changes = {side: written_text(stores[side]) for side in SIDES if side in stores}
    if not changes:
        return tokenizer
    return Value({k: v for k, v in {**tokenizer.facts, **changes}.items() if v is not None},
                 {k: v for k, v in tokenizer.why.items() if k not in changes})


def written_text(v: Value) -> Optional[str]:
    """The string a text value holds when it is one literal the code writes (its type proved by that string)."""
    why = v.reason("type")
    if v.facts.get("type") != "text" or len(why) != 1 or not isinstance(why[0], cst.SimpleString):
        return None
    text = why[0].evaluated_value
    return text if isinstance(text, str) else None


def generated(node: cst.Call, ids: Value, kwargs: Dict[str, Value]) -> Value:
    """What `generate(..., return_dict_in_generate=True)` returns: the ids (`sequences`), and per step the raw
    `logits` and the `scores` after the logits processors, which divide them by the temperature it draws at
    when it samples with one (`do_sample=True`, `temperature=`; else the scores' temperature is not known)."""
    sampling = kwargs.get("do_sample")
    temperature = kwargs.get("temperature") if sampling is not None and sampling.facts.get("number") else None
    step = {"type": TENSOR, "rank": 2, "grad": NO_GRAD, "obj": node}
    scores = Value(step, {"grad": (node,)})
    if temperature is not None:  # at the temperature this call drew at, whatever number it holds (`drawn`)
        scores = scores.but(temperature=(Value({**temperature.facts, "type": NUMBER, "drawn": node}), LOG_SPACE))
    logits = Value({**step, "temperature": raw_logits(node)}, {"grad": (node,)})
    items = (("sequences", ids), ("scores", Value({"type": TUPLE, "element": scores})),
             ("logits", Value({"type": TUPLE, "element": logits})))
    return Value({"type": OUTPUT, "generated": True, "items": items}, {"type": (node,)})


def _prompt_ids(frame, node: cst.Call, args: List[Value], kwargs: Dict[str, Value]) -> Value:
    """What `generate` is given as its prompt: `input_ids=` (`inputs=`, or the first argument), with what a
    `**encoding` hands it."""
    given = kwargs.get("input_ids") or kwargs.get("inputs") or (args[0] if args else UNKNOWN)
    for arg in node.args:
        if arg.star == "**":
            given = with_sources(given, frame.expr(arg.value).sources)
    return given


# Layers of `torch.nn` that hold no parameters: their output has the gradient their input has.
_WEIGHTLESS_LAYERS = frozenset({"Dropout", "ReLU", "Tanh", "GELU", "SiLU", "Sigmoid", "Softplus", "Identity",
                                "LeakyReLU", "ELU", "Mish", "Softmax", "LogSoftmax", "Flatten", "Unflatten",
                                "Hardtanh", "Hardswish", "Softsign", "Tanhshrink", "ReLU6", "CELU", "SELU"})


def _weightless(layer: str) -> bool:
    """An activation, a dropout, a reshape, or a loss of `torch.nn` (whose `weight=` is a buffer)."""
    return layer in _WEIGHTLESS_LAYERS or layer.endswith("Loss")


_SAME_RANK_LAYERS = frozenset({"Linear", "LayerNorm", "RMSNorm", "Dropout", "ReLU", "Tanh", "GELU", "SiLU",
                               "Sigmoid", "Softplus", "Identity"})


def _layer_facts(layer: str, args: List[Value]) -> Dict:
    first = args[0] if args else None
    if layer in _SAME_RANK_LAYERS and first is not None and first.facts.get("rank") is not None:
        return {"rank": first.facts["rank"]}
    return {}


def _float_inputs(model: Value, args: List[Value], kwargs: Dict[str, Value]) -> List[Value]:
    """The inputs of a forward that can carry gradient. A transformers model's documented inputs are token
    ids, masks, positions and labels (integer tensors) except `inputs_embeds`; a project module's are all."""
    if model.facts.get("arch") is None and not model.facts.get("pretrained"):
        return list(args) + list(kwargs.values())
    return [kwargs[name] for name in ("inputs_embeds", "pixel_values") if name in kwargs]


def output_item(output: Value, position: int, node: cst.CSTNode) -> Value:
    """An element of a forward's output read as a tuple: the logits first; TRL's value-head models give
    `(lm_logits, loss, value)`."""
    if position == 0:
        return output_field(output, "logits", node)
    if position == 2 and output.facts.get("arch") == VALUE_HEAD:
        return output_field(output, "value", node)
    return with_sources(UNKNOWN, output.sources)


def output_field(output: Value, attr: str, node: cst.CSTNode) -> Value:
    """A field of a forward's output, as the architecture documents it."""
    arch = output.facts.get("arch")
    facts: Dict = {"type": TENSOR, "obj": node}
    if attr == "logits":
        if arch in (CAUSAL_LM, VALUE_HEAD, SEQ2SEQ):
            facts.update(rank=3, axes=(BATCH, TIME, VOCAB), content=LOGITS, dist=2)
        elif arch == SEQ_CLS:
            facts.update(rank=2, axes=(BATCH, None))
        if arch != SEQ_CLS:  # a language model's logits, which nothing has divided yet
            facts.update(temperature=raw_logits(node))
    elif attr == "last_hidden_state":
        facts.update(rank=3, axes=(BATCH, TIME, None))
    elif attr == "loss":
        facts.update(rank=0)
        if arch == CAUSAL_LM and output.facts.get("labelled"):
            facts.update(content=NLL)  # mean cross-entropy of the labels under the raw logits
    elif attr == "value" and arch == VALUE_HEAD:
        facts.update(rank=2, axes=(BATCH, TIME))
    elif attr in ("hidden_states", "past_key_values", "attentions"):
        facts = {"type": TUPLE}
    else:
        return with_sources(UNKNOWN, output.sources)
    result = Value(facts, {k: output.reason("arch") for k in facts if k not in ("type", "obj")})
    grad = output.facts.get("grad")
    if grad is not None:
        result = result.but(grad=grad, cut=output.facts.get("cut"), forwards=output.facts.get("forwards"),
                            why={"grad": output.reason("grad")})
    return with_sources(result, output.sources)


MODELS = Models()
