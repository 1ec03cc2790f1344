"""A transformers / TRL trainer object holds what it was constructed with (`rllint.analysis.domains.trainers`)."""
from rllint.analysis.domains.config import CONFIG
from rllint.analysis.facts import MODEL, TOKENIZER
from tests.engine import Engine


def test_keywords_of_a_trl_trainer_are_its_attributes():
    e = Engine("""
        import trl
        from transformers import AutoModelForCausalLM, AutoTokenizer

        def reward(completions, **kw):
            return [1.0 for _ in completions]

        policy = AutoModelForCausalLM.from_pretrained("m")
        tok = AutoTokenizer.from_pretrained("m")
        config = trl.GRPOConfig(learning_rate=1e-6)
        t = trl.GRPOTrainer(reward_funcs=reward, args=config, model=policy, processing_class=tok)
        held_tok = t.processing_class
        held_model = t.model
        held_args = t.args
        lr = t.args.learning_rate
    """)
    assert e.value("t").facts["type"] == "trainer"
    assert e.value("held_tok").facts["type"] == TOKENIZER
    assert e.value("held_model").facts["model"] is e.value("policy").facts["model"]
    assert e.value("held_args").facts["type"] == CONFIG
    assert e.value("lr").facts["number"] == 1e-6


def test_older_tokenizer_keyword_is_the_processing_class_and_ref_model_is_kept():
    e = Engine("""
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import DPOTrainer as Trainer

        base = AutoModelForCausalLM.from_pretrained("m")
        frozen = AutoModelForCausalLM.from_pretrained("m")
        trainer = Trainer(base, ref_model=frozen, tokenizer=AutoTokenizer.from_pretrained("m"))
        a = trainer.tokenizer
        b = trainer.processing_class
        r = trainer.ref_model
    """)
    assert e.value("a").facts["type"] == TOKENIZER
    assert e.value("b").facts["type"] == TOKENIZER
    assert e.value("r").facts["model"] is e.value("frozen").facts["model"]


def test_getattr_with_a_default_reads_what_was_given_and_nothing_else():
    e = Engine("""
        from transformers import AutoTokenizer, Trainer

        tok = AutoTokenizer.from_pretrained("m")
        trainer = Trainer(model="m", processing_class=tok)
        found = getattr(trainer, "tokenizer", None) or getattr(trainer, "processing_class", None)
        absent = getattr(trainer, "ref_model", None)
        loaded = trainer.model
    """)
    assert e.value("found").facts["type"] == TOKENIZER
    assert e.value("absent").facts.get("type") is None  # the trainer has the attribute, built out of sight
    assert e.value("loaded").facts.get("type") is None  # a model id: the trainer loads its own model


def test_trainer_stored_on_self_by_a_method_keeps_its_attributes():
    e = Engine("""
        from transformers import AutoTokenizer
        from trl import PPOTrainer

        class Monitor:
            def __init__(self):
                self.owner = None

            def bind(self, owner):
                self.owner = owner

            def report(self):
                if self.owner is not None:
                    tk = getattr(self.owner, "processing_class", None) or getattr(self.owner, "tokenizer", None)
                    return tk.decode([1])

        def main():
            monitor = Monitor()
            monitor.bind(PPOTrainer(args=None, processing_class=AutoTokenizer.from_pretrained("m")))
            return monitor.report()
    """)
    assert e.value("tk").facts["type"] == TOKENIZER


def test_trainer_stored_by_a_method_of_another_module(tmp_path):
    e = Engine.project(tmp_path, {
        "hooks.py": """
            class Hook:
                trainer = None

                def attach(self, trainer):
                    self.trainer = trainer

                def on_step_end(self):
                    tok = self.trainer.tokenizer
                    return tok
        """,
        "train.py": """
            from transformers import AutoTokenizer
            from trl import GRPOTrainer
            from hooks import Hook

            tokenizer = AutoTokenizer.from_pretrained("m")
            trainer = GRPOTrainer(model="m", reward_funcs=[], processing_class=tokenizer)
            hook = Hook()
            hook.attach(trainer)
        """,
    }, "hooks.py")
    assert e.value("tok").facts["type"] == TOKENIZER


def test_a_trainer_of_another_library_stays_unknown():
    e = Engine("""
        from transformers import AutoTokenizer
        from lightning import Trainer
        from mylib.rl import GRPOTrainer

        import trl

        tok = AutoTokenizer.from_pretrained("m")
        a = Trainer(processing_class=tok).processing_class
        b = getattr(GRPOTrainer(processing_class=tok), "processing_class", None)
        c = getattr(trl.GRPOTrainer(processing_class=tok), "processing_class", None)
    """)
    assert e.value("a").facts.get("type") is None
    assert e.value("b").facts.get("type") is None
    assert e.value("c").facts["type"] == TOKENIZER  # the same construction of TRL's trainer


def test_a_project_class_named_like_a_trl_trainer_is_not_one():
    e = Engine("""
        import trl
        from transformers import AutoTokenizer

        class GRPOTrainer:
            def __init__(self, model=None, processing_class=None):
                self.encoder = processing_class

        tok = AutoTokenizer.from_pretrained("m")
        trainer = GRPOTrainer(model=None, processing_class=tok)
        held = trainer.processing_class
        trl_held = trl.GRPOTrainer(model=None, processing_class=tok).processing_class
    """)
    assert e.value("trainer").facts["type"] != "trainer"
    assert e.value("held").facts.get("type") is None
    assert e.value("trl_held").facts["type"] == TOKENIZER  # TRL's own, beside it


def test_a_trainer_handed_a_model_still_trains_it_out_of_sight():
    e = Engine("""
        from transformers import AutoModelForCausalLM
        from trl import GRPOTrainer

        policy = AutoModelForCausalLM.from_pretrained("m")
        t = GRPOTrainer(model=policy, reward_funcs=[])
        kept = t.model
        other = t.state
    """)
    built = e.nodes("GRPOTrainer(model=policy, reward_funcs=[])")[0]
    assert e.value("kept").facts["type"] == MODEL
    assert built in e.flow.opaque and built in e.value("other").sources  # its own attributes may carry gradient


def test_attributes_assigned_on_the_trainer_are_what_a_callee_reads():
    e = Engine("""
        from transformers import AutoTokenizer, Seq2SeqTrainer, TrainingArguments

        def inspect(trainer):
            seen_tok = trainer.processing_class
            seen_args = trainer.args
            return seen_tok, seen_args

        trainer = Seq2SeqTrainer(model="m", args=TrainingArguments(output_dir="o"))
        before = trainer.args
        trainer.tokenizer = AutoTokenizer.from_pretrained("m")
        trainer.args.learning_rate = float(input())
        inspect(trainer)
    """)
    assert e.value("seen_tok").facts["type"] == TOKENIZER  # assigned under its older name
    assert e.value("before").facts["type"] == CONFIG
    assert e.value("seen_args").facts.get("type") is None  # changed inside: not the config it was built with


def test_a_tokenizer_assigned_under_both_names_is_not_known():
    e = Engine("""
        from transformers import AutoTokenizer, Trainer

        def inspect(trainer):
            return trainer.processing_class

        first = AutoTokenizer.from_pretrained("a")
        trainer = Trainer(model="m", processing_class=first)
        kept = inspect(trainer)
        trainer.tokenizer = AutoTokenizer.from_pretrained("b")
        trainer.processing_class = first
        either = inspect(trainer)
    """)
    assert e.value("kept").facts["type"] == TOKENIZER
    assert e.value("either").facts.get("type") is None  # which assignment came last is not kept
