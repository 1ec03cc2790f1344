"""The distributed domain: values gathered across ranks (`gathered`), counts of one rank's share (`counts`,
`per_rank`) and the main process (`main_process`), as the collectives and trainer frameworks define them."""
from engine import Engine

from rllint.analysis.domains.distributed import local_count


def gather_of(engine, code):
    found = engine.value(code).facts.get("gathered")
    return engine.code(found[0]) if found else None


def counts_local(engine, bound, sliced):
    return local_count(engine.value(bound), engine.value(sliced)) is not None


def test_an_accelerator_gathers_and_the_count_of_what_it_gathered_is_one_ranks():
    engine = Engine("""
    import torch
    from accelerate import Accelerator

    def step(texts, dataset):
        acc = Accelerator()
        rewards = torch.tensor([float(len(t)) for t in texts])
        everyone = acc.gather_for_metrics(rewards)
        centred = (everyone - everyone.mean()) / (everyone.std() + 1e-6)
        return centred[: rewards.size(0)], everyone[: len(dataset)], centred[: len(rewards)]
    """)
    assert gather_of(engine, "everyone") == "acc.gather_for_metrics(rewards)"
    assert gather_of(engine, "centred") == "acc.gather_for_metrics(rewards)"  # elementwise arithmetic keeps rows
    assert counts_local(engine, "rewards.size(0)", "centred")
    assert counts_local(engine, "len(rewards)", "centred")
    assert not counts_local(engine, "len(dataset)", "everyone")  # the dataset's size: every rank's rows


def test_torch_distributed_all_gather_into_a_list_then_cat_along_the_first_axis():
    engine = Engine("""
    import torch
    from torch import distributed

    def share(scores, world):
        local = torch.as_tensor(scores).sum(-1)
        parts = [torch.zeros_like(local) for _ in range(world)]
        distributed.all_gather(tensor=local, tensor_list=parts)
        rows = torch.cat(parts, dim=0)
        side = torch.cat(parts, dim=1)
        total = rows.mean()
        return rows[: local.shape[0]], side, total
    """)
    assert gather_of(engine, "rows") == "distributed.all_gather(tensor=local, tensor_list=parts)"
    assert gather_of(engine, "side") is None  # laid side by side: the rows are not the ranks'
    assert gather_of(engine, "total") is None  # a reduction over the gathered rows
    assert counts_local(engine, "local.shape[0]", "rows")


def test_all_gather_into_tensor_writes_the_gathered_rows_into_its_output():
    engine = Engine("""
    import torch
    import torch.distributed as dist

    def share(values, world):
        out = torch.empty(world * values.size(0), device=values.device)
        dist.all_gather_into_tensor(out, values)
        per_row = out.view(world, -1)
        return out[: values.size(0)]
    """)
    assert gather_of(engine, "out") == "dist.all_gather_into_tensor(out, values)"
    assert counts_local(engine, "values.size(0)", "out")


def test_reductions_over_later_axes_keep_the_rows_and_over_the_first_do_not():
    engine = Engine("""
    import torch
    from accelerate.utils import gather

    def rewards_of(per_func):
        everyone = gather(per_func)
        summed = everyone.nansum(dim=1)
        pooled = everyone.sum(0)
        return summed, pooled
    """)
    assert gather_of(engine, "summed") == "gather(per_func)"
    assert gather_of(engine, "pooled") is None


def test_a_gather_in_a_helper_of_another_module_is_seen_by_its_caller(tmp_path):
    helper = """
    from accelerate.utils import gather_object


    def everyone(values):
        return gather_object(values)
    """
    main = """
    from comm import everyone


    def advantages(prompts, completions):
        scores = [float(len(c)) for c in completions]
        all_scores = everyone(scores)
        return all_scores[: len(scores)]
    """
    engine = Engine.project(tmp_path, {"comm.py": helper, "train.py": main}, "train.py")
    assert gather_of(engine, "all_scores") == "gather_object(values)"
    assert counts_local(engine, "len(scores)", "all_scores")


def test_a_gathered_attribute_and_the_count_of_the_local_attribute():
    engine = Engine("""
    import torch
    from accelerate import Accelerator


    class Scorer:
        def __init__(self):
            self.accelerator = Accelerator()

        def collect(self, scores):
            self.local = torch.tensor(scores)
            self.everyone = self.accelerator.gather(self.local)

        def share(self):
            return self.everyone[: len(self.local)]
    """)
    assert gather_of(engine, "self.everyone") == "self.accelerator.gather(self.local)"
    assert counts_local(engine, "len(self.local)", "self.everyone")


def test_a_trainer_subclass_has_an_accelerator_its_inputs_are_one_process_batch_and_per_device_settings():
    engine = Engine("""
    from trl import GRPOConfig, GRPOTrainer


    class MyTrainer(GRPOTrainer):
        def _generate_and_score_completions(self, inputs):
            prompts = [x["prompt"] for x in inputs]
            kept = [x["prompt"] for x in inputs if x["prompt"]]
            everyone = self.accelerator.gather(self.scores(prompts))
            rank = self.accelerator.process_index
            return everyone, len(prompts), len(kept), self.args.per_device_train_batch_size, rank

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            ids = inputs["prompt_ids"]
            shared = self.accelerator.gather(inputs["advantages"])
            return shared, ids.size(0), len(inputs)


    config = GRPOConfig(per_device_train_batch_size=4)
    per_device = config.per_device_train_batch_size
    """)
    assert gather_of(engine, "everyone") == "self.accelerator.gather(self.scores(prompts))"
    assert counts_local(engine, "len(prompts)", "everyone")
    assert not counts_local(engine, "len(kept)", "everyone")  # a filtered list: fewer rows, which ones unknown
    assert counts_local(engine, "self.args.per_device_train_batch_size", "everyone")
    assert counts_local(engine, "ids.size(0)", "shared")  # an entry of the mapping `compute_loss` is handed
    assert not counts_local(engine, "len(inputs)", "shared")  # the mapping's length counts its keys
    assert engine.facts("per_device", "per_rank", "number") == {"per_rank": "rows", "number": 4.0}
    assert engine.facts("rank", "rank_index") == {"rank_index": True}


def test_what_is_not_a_collective_gather():
    engine = Engine("""
    import asyncio
    import torch


    def gather(values):
        return values


    async def run(jobs, logits, ids):
        done = await asyncio.gather(*jobs)
        mine = gather(torch.ones(3))
        picked = logits.gather(-1, ids.unsqueeze(-1))
        return done, mine, picked
    """)
    assert gather_of(engine, "done") is None
    assert gather_of(engine, "mine") is None
    assert gather_of(engine, "picked") is None


def test_the_main_process_is_known_by_its_flag_and_by_rank_zero():
    engine = Engine("""
    import torch.distributed as dist
    from accelerate import Accelerator

    acc = Accelerator()
    first = acc.is_main_process
    zero = dist.get_rank() == 0
    other = dist.get_rank() == 1
    """)
    assert engine.facts("first", "main_process") == {"main_process": True}
    assert engine.facts("dist.get_rank() == 0", "main_process") == {"main_process": True}
    assert engine.facts("dist.get_rank() == 1", "main_process") == {"main_process": None}


def test_all_gather_object_then_the_parts_flattened_in_rank_order():
    engine = Engine("""
    import torch.distributed as dist

    def everyone(completions, world):
        scores = [float(len(c)) for c in completions]
        parts = [None] * world
        dist.all_gather_object(parts, scores)
        flat = [s for part in parts for s in part]
        some = [s for part in parts for s in part if s > 0]
        return flat[: len(scores)], some
    """)
    assert gather_of(engine, "flat") == "dist.all_gather_object(parts, scores)"
    assert gather_of(engine, "some") is None  # a test leaves items out: which rows are whose is not known
    assert gather_of(engine, "parts") is None  # one item per rank, not the ranks' rows
    assert counts_local(engine, "len(scores)", "flat")
