"""The engine's minibatches (`rllint.analysis.minibatches`): the part of a batch each pass of a loop takes, how
many samples it holds, and the statistics over such a part."""
from engine import Engine


def samples(engine, code, occurrence=-1):
    """The number of samples the engine proves `code` holds, with where that number comes from (None: no part)."""
    part = engine.value(code, occurrence).facts.get("samples")
    if part is None:
        return None
    return part.number, part.count.facts.get("origin")


def test_a_slice_whose_bounds_grow_with_the_loop_takes_the_step_from_an_argparse_default():
    engine = Engine("""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=2)
    args = parser.parse_args()

    def epochs(adv, n):
        for start in range(0, n, args.mb):
            end = start + args.mb
            part = adv[start:end]
    """)
    assert samples(engine, "part") == (2.0, "default of --mb")


def test_slices_by_the_number_of_the_pass_times_the_size_and_a_clipped_upper_bound():
    engine = Engine("""
    MB = 3

    def passes(adv, n):
        for i in range(n // MB):
            scaled = adv[i * MB:(i + 1) * MB]
        for s in range(0, n, MB):
            clipped = adv[s:min(s + MB, n)]
        for s in range(n):
            whole = adv[:MB]
            unrelated = adv[s:n]
    """)
    assert samples(engine, "scaled") == (3.0, "constant MB")
    assert samples(engine, "clipped") == (3.0, "constant MB")
    assert samples(engine, "whole") is None  # the same rows on every pass: not a part the loop takes
    assert samples(engine, "unrelated") is None  # its size shrinks with the pass: not known


def test_an_index_that_holds_a_slice_of_a_permutation_and_not_a_row_by_the_loop_s_number():
    engine = Engine("""
    import torch

    def passes(adv, ids, n, size: int = 4):
        perm = torch.randperm(n)
        for lo in range(0, n, size):
            picked = adv[perm[lo:lo + size]].float().to("cuda")
        for i in range(n):
            row = ids[i]
    """)
    assert samples(engine, "picked") == (4.0, "default of parameter `size` of passes()")
    assert samples(engine, "row") is None  # one row may be a sequence's tokens or a prompt's group: not counted


def test_a_dataloader_batch_its_unpacked_items_and_a_default_batch_size_of_one():
    engine = Engine("""
    from dataclasses import dataclass
    from torch.utils.data import DataLoader, TensorDataset

    @dataclass
    class Config:
        mini_batch_size: int = 2

    def update(cfg: Config, dataset):
        for adv, ids in DataLoader(dataset, batch_size=cfg.mini_batch_size, shuffle=True):
            first = adv
        for batch in DataLoader(dataset):
            second = batch["advantages"]

    update(Config(), TensorDataset())
    """)
    assert samples(engine, "first") == (2.0, "default of Config.mini_batch_size")
    assert samples(engine, "second") == (1.0, "the default batch size of DataLoader")


def test_a_batch_sampler_and_chunks_of_split_zipped_together():
    engine = Engine("""
    import torch
    from torch.utils.data import BatchSampler, SubsetRandomSampler

    def update(adv, old, n):
        for indices in BatchSampler(SubsetRandomSampler(range(n)), 3, False):
            sampled = adv[indices]
        for a, o in zip(adv.split(2), torch.split(old, 2)):
            chunk = a
            other = o
    """)
    assert samples(engine, "sampled")[0] == 3.0
    assert samples(engine, "chunk")[0] == 2.0
    assert samples(engine, "other")[0] == 2.0


def test_statistics_over_a_whole_part_and_not_along_a_dim():
    engine = Engine("""
    import torch

    def update(adv, n):
        for s in range(0, n, 2):
            part = adv[s:s + 2]
            whole = part.mean()
            spread = torch.std(part)
            rows = part.mean(dim=1)
            centred = part - whole
    """)
    assert engine.value("whole").facts["batch_stat"][0] == "mean"
    assert engine.value("spread").facts["batch_stat"][0] == "spread"
    assert "batch_stat" not in engine.value("rows").facts
    (event,) = engine.flow.events("centred")
    assert engine.code(event.node) == "part - whole"
