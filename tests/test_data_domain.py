"""The engine follows token ids from the tokenizer call that makes them to the `generate` that samples from them:
through a DataLoader's collate function or its dataset's `__getitem__`, progress bars, closures and methods of
other modules. And only the ids: what else a batch holds, or a tokenizer the engine does not know, carries no
encoding."""
import libcst as cst

from engine import Engine

HEAD = """
    import torch
    from torch.utils.data import DataLoader
    from tqdm import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
    policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
"""


def encodings(engine: Engine, code: str):
    """The tokenizer calls whose ids the value of `code` carries, by their code."""
    return sorted(engine.code(n) for n in engine.value(code).sources if isinstance(n, cst.Call))


def sampled_from(engine: Engine):
    """For each `generate` the engine saw: the tokenizer calls its prompt ids come from."""
    return [sorted(engine.code(n) for n in event.target.sources if isinstance(n, cst.Call))
            for event in engine.flow.generations]


def test_a_closure_collate_function_batches_what_its_tokenizer_call_makes():
    engine = Engine(HEAD + """
    def main(rows):
        def collate(batch):
            texts = [r["prompt"] for r in batch]
            enc = tokenizer(texts, padding=True, return_tensors="pt")
            return enc["input_ids"], enc["attention_mask"], texts
        loader = DataLoader(rows, batch_size=4, collate_fn=collate)
        for step, (ids, mask, texts) in enumerate(tqdm(loader)):
            out = policy.generate(ids[0:1], attention_mask=mask[0:1], do_sample=True)
    """)
    call = 'tokenizer(texts, padding=True, return_tensors="pt")'
    assert encodings(engine, "ids") == [call]
    assert encodings(engine, "texts") == []  # the batch's other items are not the ids
    assert sampled_from(engine) == [[call]]


def project_generations(tmp_path, files, main):
    """For each `generate` the flow of `main` sees (through the project's modules): the call of `main` it
    happens through, and the tokenizer calls its prompt ids come from."""
    engine = Engine.project(tmp_path, files, main)
    return [(engine.code(e.via) if e.via is not None else None, sorted(engine.code(n) for n in e.target.sources))
            for e in engine.flow.generations]


SAMPLER = """
    class Sampler:
        def __init__(self, model):
            self.model = model

        def rollouts(self, prompt_ids, mask):
            rows = [prompt_ids[i:i + 1] for i in range(prompt_ids.size(0))]
            return [self.model.generate(r, max_new_tokens=1024, do_sample=True) for r in rows]
"""


def test_a_dataset_class_of_another_module_reaches_the_loop_without_a_collate_function(tmp_path):
    data = """
        import torch


        class Prompts(torch.utils.data.Dataset):
            def __init__(self, rows, tok):
                self.rows, self.tok = rows, tok

            def __getitem__(self, i):
                return self.tok(self.rows[i], truncation=True, max_length=256)["input_ids"]
    """
    train = HEAD + """
    from data import Prompts

    def run(rows):
        for ids in DataLoader(Prompts(rows, tokenizer), batch_size=1):
            policy.generate(input_ids=ids, do_sample=True)
    """
    assert project_generations(tmp_path, {"data.py": data, "train.py": train}, "train.py") == [
        (None, ["self.tok(self.rows[i], truncation=True, max_length=256)"])]


def test_a_bound_collate_method_and_a_sampler_of_other_modules(tmp_path):
    batches = """
        class Batches:
            def __init__(self, tok):
                self.tok = tok

            def collate(self, batch):
                return self.tok([b["q"] for b in batch], padding="longest", return_tensors="pt")
    """
    train = HEAD + """
    from batches import Batches
    from sampler import Sampler

    def train(rows):
        batches = Batches(tokenizer)
        sampler = Sampler(policy)
        for batch in DataLoader(rows, collate_fn=batches.collate):
            sampler.rollouts(batch["input_ids"], batch["attention_mask"])
    """
    files = {"batches.py": batches, "sampler.py": SAMPLER, "train.py": train}
    assert project_generations(tmp_path, files, "train.py") == [
        ('sampler.rollouts(batch["input_ids"], batch["attention_mask"])',
         ['self.tok([b["q"] for b in batch], padding="longest", return_tensors="pt")'])]


def test_ids_of_a_tokenizer_the_engine_does_not_know_carry_no_encoding():
    engine = Engine("""
    def rollouts(policy, tok, prompts):
        enc = tok(prompts, padding=True, return_tensors="pt")
        return policy.generate(**enc)
    """)
    assert encodings(engine, "enc") == []


def test_rendered_text_is_not_an_encoding_but_a_tokenized_template_is():
    engine = Engine(HEAD + """
    def prompts(chats):
        text = tokenizer.apply_chat_template(chats, tokenize=False, add_generation_prompt=True)
        ids = tokenizer.apply_chat_template(chats, add_generation_prompt=True, return_tensors="pt")
        return text, ids
    """)
    assert encodings(engine, "text") == []
    assert encodings(engine, "ids") == ['tokenizer.apply_chat_template(chats, add_generation_prompt=True, '
                                        'return_tensors="pt")']


def test_a_nested_function_reads_the_names_its_enclosing_function_binds():
    engine = Engine("""
    from transformers import AutoModelForCausalLM

    def build(path):
        model = AutoModelForCausalLM.from_pretrained(path)

        def forward(ids):
            return model(ids).logits

        return forward
    """)
    assert engine.facts("model(ids).logits", "rank") == {"rank": 3}


def test_an_attribute_asked_for_while_the_constructor_is_being_interpreted_is_asked_again_later():
    # analysing `__init__` first reads its callers: `train`, whose collate run asks for `self.tok` before the
    # constructor's own run has stored it; that answer is not kept
    engine = Engine(HEAD + """
    class Batches:
        def __init__(self, tok):
            self.tok = tok

        def collate(self, batch):
            return self.tok([b["q"] for b in batch], padding="longest", return_tensors="pt")

    def train(rows):
        batches = Batches(tokenizer)
        for batch in DataLoader(rows, collate_fn=batches.collate):
            policy.generate(**batch, do_sample=True)
    """)
    assert engine.facts("self.tok", "type") == {"type": "tokenizer"}
