"""Launch-config readers: exact (key, value, text, line, column, command, source) records."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from rllint.analysis.configs import (
    ConfigEntry, ConfigSyntaxError, command_is_rl, is_rl_config, read_shell, read_toml, read_yaml, rl_entries,
)

DATA = Path(__file__).parent / "data" / "configs"
BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench" / "cases"
REALWORLD = Path("/tmp/rllint-realworld/src")


def rows(entries):
    """(key, value, text, line, column) of each entry, in order."""
    return [(e.key, e.value, e.text, e.line, e.column) for e in entries]


def one(entries, key, command=None):
    found = [e for e in entries if e.key == key and (command is None or e.command == command)]
    assert len(found) == 1, (key, found)
    return found[0]


def src(text):
    return textwrap.dedent(text).lstrip("\n")


# ---------------------------------------------------------------------------- YAML

def test_yaml_nested_keys_positions_and_types():
    text = src("""
        algorithm:
          adv_estimator: grpo
          use_kl_in_reward: false   # comment after a value
        actor_rollout_ref:
          actor:
            optim:
              lr: 1e-6
            kl_loss_coef: 0.001
          rollout:
            n: 8
        learning_rate: 2.0e-05
        tokenizer: null
        empty: ~
        """)
    assert rows(read_yaml(text)) == [
        ("algorithm.adv_estimator", "grpo", "grpo", 2, 18),
        ("algorithm.use_kl_in_reward", False, "false", 3, 21),
        ("actor_rollout_ref.actor.optim.lr", 1e-06, "1e-6", 7, 11),
        ("actor_rollout_ref.actor.kl_loss_coef", 0.001, "0.001", 8, 19),
        ("actor_rollout_ref.rollout.n", 8, "8", 10, 8),
        ("learning_rate", 2e-05, "2.0e-05", 11, 16),
        ("tokenizer", None, "null", 12, 12),
        ("empty", None, "~", 13, 8),
    ]
    entry = read_yaml(text)[0]
    assert (entry.command, entry.source, entry.invocation) == (None, "yaml", 0)


def test_yaml_floats_without_dot_are_numbers_like_hydra_reads_them():
    values = [e.value for e in read_yaml("a: 1e-6\nb: 5E+3\nc: -3e-5\nd: 1_000\ne: 1.5\nf: 0.1e-2\n")]
    assert values == [1e-06, 5000.0, -3e-05, 1000, 1.5, 0.001]
    assert all(isinstance(v, float) for v in values[:3])


def test_yaml_quoted_values_keep_their_quotes_in_text_and_stay_strings():
    assert rows(read_yaml("lr: \"5e-6\"\nname: 'run 1'  # c\n")) == [
        ("lr", "5e-6", '"5e-6"', 1, 5),
        ("name", "run 1", "'run 1'", 2, 7),
    ]


def test_yaml_flow_style_mapping_and_sequence():
    text = "actor: {optim: {lr: 1e-6, betas: [0.9, 0.95]}, clip_ratio: 0.2}\nlogger: [\"console\", wandb]\n"
    assert rows(read_yaml(text)) == [
        ("actor.optim.lr", 1e-06, "1e-6", 1, 21),
        ("actor.optim.betas.0", 0.9, "0.9", 1, 35),
        ("actor.optim.betas.1", 0.95, "0.95", 1, 40),
        ("actor.clip_ratio", 0.2, "0.2", 1, 60),
        ("logger.0", "console", '"console"', 2, 10),
        ("logger.1", "wandb", "wandb", 2, 21),
    ]


def test_yaml_anchor_merge_positions_are_where_the_value_is_written():
    text = src("""
        base: &base
          lr: 1e-6
          clip_ratio: 0.2
        extra: &extra
          lr: 3e-6
          n: 4
        actor:
          <<: [*base, *extra]
          clip_ratio: 0.1
        critic:
          lr: *lr_value
        """).replace("*lr_value", "&lr 5e-6") + "ref_lr: *lr\n"
    entries = read_yaml(text)
    assert rows(e for e in entries if e.key.startswith(("actor.", "critic.", "ref_"))) == [
        ("actor.lr", 1e-06, "1e-6", 2, 7),         # the first merged mapping wins
        ("actor.n", 4, "4", 6, 6),
        ("actor.clip_ratio", 0.1, "0.1", 9, 15),  # a key written in the mapping wins over merges
        ("critic.lr", 5e-06, "5e-6", 11, 11),
        ("ref_lr", 5e-06, "5e-6", 11, 11),        # an alias points at its anchor's value
    ]


def test_yaml_lists_index_every_element_including_hydra_defaults():
    text = src("""
        defaults:
          - ppo_trainer
          - actor@actor_rollout_ref.actor: dp_actor
          - _self_
        """)
    assert rows(read_yaml(text)) == [
        ("defaults.0", "ppo_trainer", "ppo_trainer", 2, 5),
        ("defaults.1.actor@actor_rollout_ref.actor", "dp_actor", "dp_actor", 3, 36),
        ("defaults.2", "_self_", "_self_", 4, 5),
    ]


def test_yaml_byte_order_mark_and_crlf_line_ends():
    assert rows(read_yaml("\ufefflr: 1e-6\r\nb:\r\n  c: 2\r\n")) == [("lr", 1e-06, "1e-6", 1, 5), ("b.c", 2, "2", 3, 6)]


def test_yaml_multi_document_files_number_their_documents():
    entries = read_yaml("---\nlr: 1e-6\n---\n# second\nlr: 2e-5\n...\n")
    assert [(e.key, e.value, e.line, e.invocation) for e in entries] == [("lr", 1e-06, 2, 0), ("lr", 2e-05, 5, 1)]


def test_yaml_block_scalars_interpolations_and_odd_tags_read_as_strings():
    text = "cmd: |\n  a\n  b\nlen: ${data.max_response_length}\nref: !Ref x\nbad: !!int nope\nday: 2024-01-01\n"
    assert rows(read_yaml(text)) == [
        ("cmd", "a\nb\n", "|\n  a\n  b", 1, 6),
        ("len", "${data.max_response_length}", "${data.max_response_length}", 4, 6),
        ("ref", "x", "x", 5, 11),
        ("bad", "nope", "nope", 6, 12),
        ("day", "2024-01-01", "2024-01-01", 7, 6),
    ]


def test_yaml_recursive_aliases_and_degenerate_documents_terminate():
    assert rows(read_yaml("a: &x [*x, 1]\n")) == [("a.1", 1, "1", 1, 12)]
    assert rows(read_yaml("a: &x\n  !!float 5\nb: *x\n")) == [("a", 5.0, "5", 2, 11), ("b", 5.0, "5", 2, 11)]
    assert read_yaml("") == [] and read_yaml("# only a comment\n") == [] and read_yaml("just a scalar") == []
    assert rows(read_yaml("- 1\n- a: 2\n")) == [("0", 1, "1", 1, 3), ("1.a", 2, "2", 2, 6)]


@pytest.mark.parametrize("text, line, column", [
    ("a: 1\nb: [1, 2\nc: 3\n", 3, 2),
    ("lr: 1e-6\n  bad: 2\n", 2, 6),
    ("a: 1\n\tb: 2\n", 2, 1),
    ("x: *nope\n", 1, 4),
    ("key: 'unterminated\n", 2, 1),
])
def test_yaml_syntax_error_position(text, line, column):
    with pytest.raises(ConfigSyntaxError) as caught:
        read_yaml(text)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert caught.value.message


def test_yaml_reader_error_has_a_position():
    with pytest.raises(ConfigSyntaxError) as caught:
        read_yaml("a: 1\nb: \x07\n")
    assert (caught.value.line, caught.value.column) == (2, 4)


def test_yaml_sample_of_a_verl_hydra_config():
    entries = read_yaml((DATA / "verl_grpo_hydra.yaml").read_text())
    assert rows([one(entries, "actor_rollout_ref.actor.optim.lr"), one(entries, "actor_rollout_ref.rollout.n"),
                 one(entries, "actor_rollout_ref.actor.fsdp_config.param_offload"),
                 one(entries, "actor_rollout_ref.ref.fsdp_config.param_offload"),
                 one(entries, "defaults.0"), one(entries, "trainer.logger.1")]) == [
        ("actor_rollout_ref.actor.optim.lr", 1e-06, "1e-6", 24, 17),
        ("actor_rollout_ref.rollout.n", 5, "5", 36, 8),
        ("actor_rollout_ref.actor.fsdp_config.param_offload", True, "true", 31, 22),
        ("actor_rollout_ref.ref.fsdp_config.param_offload", False, "false", 11, 18),
        ("defaults.0", "ppo_trainer", "ppo_trainer", 7, 5),
        ("trainer.logger.1", "wandb", '"wandb"', 45, 23),
    ]
    assert len(entries) == 32


# --------------------------------------------------------------------------- shell

# ---------------------------------------------------------------------------- TOML

def test_toml_tables_dotted_keys_arrays_and_inline_tables_by_dotted_key_where_written():
    text = src("""
        # sampling
        temperature = 0.3  # low
        model.name = "gpt2"
        sizes = [1, 2]

        [lora]
        rank = 8
        extra = { alpha = 16 }
        """)
    assert rows(read_toml(text)) == [
        ("temperature", 0.3, "0.3", 2, 15),
        ("model.name", "gpt2", '"gpt2"', 3, 14),
        ("sizes.0", 1, "1", 4, 9),  # an element: at the key that holds the array
        ("sizes.1", 2, "2", 4, 9),
        ("lora.rank", 8, "8", 7, 8),
        ("lora.extra.alpha", 16, "16", 8, 9),  # an inline table's keys: at the key that holds it
    ]
    assert (read_toml(text)[0].source, read_toml(text)[0].invocation) == ("toml", 0)


@pytest.mark.parametrize("text", ["a = [1,\n", '"quoted key" = 1\n', "[[runs]]\nlr = 1\n"])
def test_toml_that_tomllib_refuses_or_that_repeats_keys_is_not_read(text):
    with pytest.raises(ConfigSyntaxError):
        read_toml(text)


def test_shell_continuations_keep_positions_in_the_original_text():
    text = src("""
        python3 -m verl.trainer.main_ppo \\
            algorithm.adv_estimator=grpo \\
            actor_rollout_ref.actor.optim.lr=1e-6 \\
            data.max_response_length=1024 trainer.nnodes=1
        """)
    entries = read_shell(text)
    assert rows(entries) == [
        ("algorithm.adv_estimator", "grpo", "grpo", 2, 29),
        ("actor_rollout_ref.actor.optim.lr", 1e-06, "1e-6", 3, 38),
        ("data.max_response_length", 1024, "1024", 4, 30),
        ("trainer.nnodes", 1, "1", 4, 50),
    ]
    assert {(e.command, e.source, e.invocation) for e in entries} == {("verl.trainer.main_ppo", "shell-override", 0)}


def test_shell_crlf_line_ends():
    text = "LR=1e-5\r\npython3 -m verl.trainer.main_ppo \\\r\n  a.b=$LR \\\r\n  c=2\r\n"
    assert rows(read_shell(text)) == [("LR", 1e-05, "1e-5", 1, 4), ("a.b", 1e-05, "1e-5", 1, 4), ("c", 2, "2", 4, 5)]


def test_shell_flag_forms_quoting_and_booleans():
    text = ("python -m openrlhf.cli.train_ppo_ray --actor_learning_rate=5e-7 --critic_learning_rate '9e-6' \\\n"
            "  --pretrain \"Qwen/Qwen2.5 7B\" --bf16 --top_k -1 --flash_attn\n")
    assert rows(read_shell(text)) == [
        ("actor_learning_rate", 5e-07, "5e-7", 1, 60),
        ("critic_learning_rate", 9e-06, "'9e-6'", 1, 88),
        ("pretrain", "Qwen/Qwen2.5 7B", '"Qwen/Qwen2.5 7B"', 2, 14),
        ("bf16", True, "--bf16", 2, 32),
        ("top_k", -1, "-1", 2, 47),
        ("flash_attn", True, "--flash_attn", 2, 50),
    ]
    assert {e.source for e in read_shell(text)} == {"shell-flag"}


def test_shell_values_parse_numbers_and_booleans_from_the_word():
    text = "python t.py --a 8 --b 5e-6 --c 2E-05 --d True --e false --f null --g 1e+4 --h v1.0 --i .5\n"
    assert [e.value for e in read_shell(text)] == [8, 5e-06, 2e-05, True, False, None, 10000.0, "v1.0", 0.5]


def test_shell_hydra_plus_overrides_and_quoted_values():
    text = src("""
        python3 -m verl.trainer.main_ppo +actor_rollout_ref.actor.fsdp_config.model_dtype=bf16 \\
          ++actor_rollout_ref.rollout.val_kwargs.n=1 trainer.logger='["console","wandb"]' \\
          "data.max_prompt_length=512" ~trainer.val_before_train
        """)
    assert rows(read_shell(text)) == [
        ("actor_rollout_ref.actor.fsdp_config.model_dtype", "bf16", "bf16", 1, 83),
        ("actor_rollout_ref.rollout.val_kwargs.n", 1, "1", 2, 44),
        ("trainer.logger", '["console","wandb"]', "'[\"console\",\"wandb\"]'", 2, 61),
        ("data.max_prompt_length", 512, "512", 3, 27),
    ]


def test_shell_arrays_with_comments_are_given_to_the_command_that_expands_them():
    text = src("""
        args=(
          --n_samples_per_prompt 4   # group size
          # --eps_clip 0.1 (commented out)
          --eps_clip 0.02  # narrow
          --use_kl_loss
        )
        args+=(--init_kl_coef=1e-3)
        unused=(--actor_learning_rate 1e-4)
        python3 -m openrlhf.cli.train_ppo_ray --pretrain m "${args[@]}"
        """)
    entries = read_shell(text)
    assert [(e.key, e.value, e.line, e.column, e.command, e.invocation) for e in entries] == [
        ("pretrain", "m", 9, 50, "openrlhf.cli.train_ppo_ray", 0),
        ("n_samples_per_prompt", 4, 2, 26, "openrlhf.cli.train_ppo_ray", 0),
        ("eps_clip", 0.02, 4, 14, "openrlhf.cli.train_ppo_ray", 0),
        ("use_kl_loss", True, 5, 3, "openrlhf.cli.train_ppo_ray", 0),
        ("init_kl_coef", 0.001, 7, 23, "openrlhf.cli.train_ppo_ray", 0),
        ("actor_learning_rate", 0.0001, 8, 31, None, None),  # an array no command received
    ]


def test_shell_variables_resolve_to_the_position_of_their_literal():
    text = src("""
        export LR=3e-5
        KL="0.5"
        CLIP=${CLIP:-0.05}
        N=$ROLLOUTS
        python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.lr=$LR \\
            algorithm.kl_ctrl.kl_coef="${KL}" actor_rollout_ref.actor.clip_ratio=$CLIP \\
            actor_rollout_ref.rollout.n=$N data.max_response_length=${MAXLEN:-256} \\
            trainer.total_epochs=${EPOCHS}
        """)
    entries = read_shell(text)
    assert rows(e for e in entries if e.source == "shell-variable") == [
        ("LR", 3e-05, "3e-5", 1, 11),
        ("KL", 0.5, '"0.5"', 2, 4),
        ("CLIP", 0.05, "0.05", 3, 14),
        ("N", "$ROLLOUTS", "$ROLLOUTS", 4, 3),
    ]
    assert rows(e for e in entries if e.source == "shell-override") == [
        ("actor_rollout_ref.actor.optim.lr", 3e-05, "3e-5", 1, 11),
        ("algorithm.kl_ctrl.kl_coef", 0.5, '"0.5"', 2, 4),
        ("actor_rollout_ref.actor.clip_ratio", 0.05, "0.05", 3, 14),
        ("actor_rollout_ref.rollout.n", "$ROLLOUTS", "$N", 7, 33),  # not a literal: what it holds, at the word
        ("data.max_response_length", 256, "256", 7, 71),
        ("trainer.total_epochs", "${EPOCHS}", "${EPOCHS}", 8, 26),
    ]


def test_shell_flag_values_from_variables_and_string_argument_lists():
    text = src("""
        run() {
          python train_grpo.py --learning_rate $LR --beta=${BETA} $EXTRA "$EXTRA"
        }
        LR=1e-5
        BETA=0.04
        EXTRA="--num_generations 2 --bf16"
        run
        """)
    entries = read_shell(text)
    flags = [e for e in entries if e.source == "shell-flag"]
    assert rows(flags) == [  # a function body runs after the assignments that follow it in the text
        ("learning_rate", 1e-05, "1e-5", 4, 4),
        ("beta", 0.04, "0.04", 5, 6),
        ("num_generations", 2, "2", 6, 26),   # `$EXTRA` unquoted: split into words
        ("bf16", True, "--bf16", 6, 28),  # `"$EXTRA"` quoted is one word that names no flag
    ]
    assert {e.command for e in flags} == {"train_grpo.py"}


def test_shell_comments_heredocs_and_non_launchers_give_no_entries():
    text = src("""
        # python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.lr=1e-3
        echo "--lr 1e-3" lr=1e-3
        [[ -f ckpt/config.json ]] && { echo done; exit 0; }
        cat > notes.txt <<-'EOF'
        	--learning_rate 1e-3
        	EOF
        python train.py --tag a#b --lr 1e-6 2>&1 | tee log.txt  # --lr 1e-3
        """)
    assert rows(read_shell(text)) == [("tag", "a#b", "a#b", 7, 23), ("lr", 1e-06, "1e-6", 7, 32)]


def test_shell_entry_points_of_launchers():
    text = src("""
        python3 -m verl.trainer.main_ppo a=1
        python -u -m openrlhf.cli.train_ppo_ray --b 1
        deepspeed --num_gpus 8 --module openrlhf.cli.train_sft --c 1
        torchrun --nproc_per_node=8 --nnodes 1 -m verl.trainer.fsdp_sft_trainer d=1
        torchrun --standalone --nproc_per_node 8 examples/train_grpo.py --e 1
        accelerate launch --config_file zero3.yaml --num_processes 7 --multi_gpu train.py --f 1
        trl grpo --config grpo.yaml
        ray job submit --address="http://127.0.0.1:8265" --runtime-env-json='{"a": 1}' \\
          -- python3 -m verl.trainer.main_ppo g=1
        CUDA_VISIBLE_DEVICES=0,1 nohup python train_rloo.py --h 1 > run.log 2>&1 &
        uv run --with vllm python -m trl.scripts.grpo --i 1
        python -m torch.distributed.run --nproc_per_node 2 ppo.py --j 1
        $PY -m my.trainer --k 1
        """).replace("$PY", "PY=python3\n$PY")
    entries = read_shell(text)
    assert [(e.key, e.command, e.invocation) for e in entries if e.source != "shell-variable"] == [
        ("a", "verl.trainer.main_ppo", 0),
        ("b", "openrlhf.cli.train_ppo_ray", 1),
        ("c", "openrlhf.cli.train_sft", 2),
        ("d", "verl.trainer.fsdp_sft_trainer", 3),
        ("e", "examples/train_grpo.py", 4),
        ("f", "train.py", 5),
        ("config", "trl grpo", 6),
        ("g", "verl.trainer.main_ppo", 7),
        ("h", "train_rloo.py", 8),
        ("i", "trl.scripts.grpo", 9),
        ("j", "ppo.py", 10),
        ("k", "my.trainer", 11),
    ]
    assert [(e.key, e.value, e.command) for e in entries if e.source == "shell-variable"] == [
        ("CUDA_VISIBLE_DEVICES", "0,1", "train_rloo.py"),  # environment of that one command
        ("PY", "python3", None),
    ]


def test_shell_sample_of_a_verl_example_script():
    entries = read_shell((DATA / "verl_gsm8k_grpo.sh").read_text())
    command = "verl.trainer.main_ppo"
    assert rows([one(entries, "actor_rollout_ref.actor.optim.lr"), one(entries, "actor_rollout_ref.rollout.n"),
                 one(entries, "actor_rollout_ref.actor.fsdp_config.model_dtype"),
                 one(entries, "actor_rollout_ref.actor.kl_loss_coef"), one(entries, "data.truncation"),
                 one(entries, "trainer.total_epochs")]) == [
        ("actor_rollout_ref.actor.optim.lr", 1e-06, "1e-6", 12, 22),
        ("actor_rollout_ref.rollout.n", 5, "5", 13, 11),
        ("actor_rollout_ref.actor.fsdp_config.model_dtype", "bf16", "bf16", 35, 54),
        ("actor_rollout_ref.actor.kl_loss_coef", 0.001, "0.001", 30, 42),
        ("data.truncation", "error", "'error'", 23, 21),
        ("trainer.total_epochs", 15, "15", 50, 26),
    ]
    assert len([e for e in entries if e.command == command]) == 35


def test_shell_sample_of_an_openrlhf_pipeline_with_an_sft_stage():
    text = (DATA / "openrlhf_reinforce_pp.sh").read_text()
    entries = read_shell(text)
    assert rows([one(entries, "learning_rate"), one(entries, "actor.adam.lr"),
                 one(entries, "rollout.max_new_tokens"), one(entries, "top_p"),
                 one(entries, "save_path", "openrlhf.cli.train_ppo_ray")]) == [
        ("learning_rate", 5e-06, "5e-6", 15, 81),
        ("actor.adam.lr", 5e-07, "5e-7", 23, 20),
        ("rollout.max_new_tokens", 1024, "1024", 25, 29),
        ("top_p", 0.95, "0.95", 29, 38),
        ("save_path", "./checkpoint/llama3-8b-rpp", "./checkpoint/llama3-8b-rpp", 5, 10),
    ]
    assert not [e for e in entries if e.line == 9]  # here-document text
    assert is_rl_config(entries, text)
    assert {e.command for e in rl_entries(entries, text)} == {"openrlhf.cli.train_ppo_ray"}


# ---------------------------------------------------------------------- RL or not

def test_per_command_rl_judgement_sft_stage_versus_ppo_stage():
    text = src("""
        deepspeed --module openrlhf.cli.train_sft --learning_rate 2e-5
        deepspeed --module openrlhf.cli.train_rm --learning_rate 9e-6
        python -m openrlhf.cli.train_ppo_ray --actor_learning_rate 2e-5
        python train.py --num_generations 8 --learning_rate 3e-5
        python train.py --learning_rate 4e-5
        trl dpo --beta 0.1
        trl sft --learning_rate 5e-5
        """)
    entries = read_shell(text)
    groups = {}
    for entry in entries:
        groups.setdefault(entry.invocation, []).append(entry)
    assert {i: command_is_rl(g) for i, g in groups.items()} == {
        0: False, 1: False, 2: True, 3: True, 4: False, 5: True, 6: False}
    assert is_rl_config(entries, text)
    assert sorted(e.line for e in rl_entries(entries, text)) == [3, 4, 4, 6]


def test_sft_only_script_is_not_rl_config():
    text = "LR=2e-5\ndeepspeed --module openrlhf.cli.train_sft --learning_rate $LR\n"
    entries = read_shell(text)
    assert not is_rl_config(entries, text) and rl_entries(entries, text) == []


@pytest.mark.parametrize("text, expected", [
    ("actor_rollout_ref:\n  actor:\n    optim:\n      lr: 1e-6\n", True),
    ("algorithm:\n  adv_estimator: grpo\n", True),
    ("learning_rate: 2e-5\nnum_generations: 8\n", True),
    ("# trl grpo --config this.yaml\nlearning_rate: 2e-5\n", True),
    ("# python3 -m verl.trainer.main_ppo --config-name x\ndata:\n  max_response_length: 256\n", True),
    ("# trl sft --config this.yaml\nlearning_rate: 2e-5\n", False),
    ("# fields of trl.GRPOConfig\nlearning_rate: 2e-5\n", True),
    ("# fields of trl.SFTConfig\nlearning_rate: 2e-5\nmax_length: 1024\n", False),
    ("learning_rate: 2e-5\nmax_completion_length: 256\n", True),
    ("# torchrun -m verl.trainer.fsdp_sft_trainer\noptim:\n  lr: 1e-5\nmodel:\n  partial_pretrain: x\n", False),
    ("rollout:\n  n: 4\n  temperature: 0.7\n", False),  # a generation config: top-level `rollout.n` is not RL-only
    ("worker:\n  rollout:\n    n: 4\n", True),
    ("model_name_or_path: gpt2\nlearning_rate: 2e-5\n", False),
])
def test_yaml_rl_config(text, expected):
    entries = read_yaml(text)
    assert is_rl_config(entries, text) is expected
    assert rl_entries(entries, text) == (entries if expected else [])


# ------------------------------------------------------------------- benchmarks

def _labelled_lines(path: Path):
    """Lines labelled with a hyperparameter rule (RL6xx, RL306): the readers must give an entry there."""
    return {number for number, line in enumerate(path.read_text().splitlines(), 1)
            if re.search(r"#\s*expect:.*\b(RL6\d\d|RL306)\b", line)}


def _bench_configs():
    if not BENCH.is_dir():
        return []
    return sorted(p for folder in ("rules", "scripts") for p in (BENCH / folder).iterdir()
                  if p.suffix in (".yaml", ".yml", ".sh"))


@pytest.mark.skipif(not BENCH.is_dir(), reason="benchmark cases not present")
@pytest.mark.parametrize("path", _bench_configs(), ids=lambda p: p.name)
def test_every_labelled_bench_line_holds_an_rl_entry(path):
    text = path.read_text()
    entries = read_yaml(text) if path.suffix in (".yaml", ".yml") else read_shell(text)
    assert is_rl_config(entries, text)
    assert _labelled_lines(path) <= {e.line for e in rl_entries(entries, text)}


@pytest.mark.skipif(not BENCH.is_dir(), reason="benchmark cases not present")
def test_bench_pipeline_sft_stage_is_not_judged():
    path = BENCH / "scripts" / "openrlhf_pipeline.sh"
    text = path.read_text()
    entries = read_shell(text)
    sft = one(entries, "learning_rate", "openrlhf.cli.train_sft")
    assert (sft.value, sft.line, sft.column) == (2e-05, 43, 21)
    judged = rl_entries(entries, text)
    assert sft not in judged and one(judged, "actor_learning_rate").line == 101
    assert {e.command for e in judged} == {"openrlhf.cli.train_ppo_ray"}


def _realworld(suffixes):
    if not REALWORLD.is_dir():
        return []
    return sorted(p for p in REALWORLD.rglob("*") if p.suffix in suffixes and p.is_file())


@pytest.mark.skipif(not REALWORLD.is_dir(), reason="real-world sources not unpacked")
def test_real_yaml_configs_read_without_errors():
    paths = _realworld((".yaml", ".yml"))
    assert paths
    total = 0
    for path in paths:
        text = path.read_text(errors="replace")
        entries = read_yaml(text)
        is_rl_config(entries, text)
        total += len(entries)
        lines = text.splitlines()
        for entry in entries:  # each record points at its text
            assert lines[entry.line - 1][entry.column - 1:].startswith(entry.text.splitlines()[0]), (path, entry)
    assert total > 1000


@pytest.mark.skipif(not REALWORLD.is_dir(), reason="real-world sources not unpacked")
def test_real_shell_scripts_and_texts_read_without_errors():
    """The corpus ships no launch scripts today; its YAML read as shell text must not break the scanner."""
    for path in _realworld((".sh", ".bash", ".yaml")):
        text = path.read_text(errors="replace")
        entries = read_shell(text)
        is_rl_config(entries, text)
        assert all(isinstance(e, ConfigEntry) for e in entries)


def test_deep_nesting_reads_or_raises_a_config_error():
    assert len(read_yaml("a: " + "[" * 999 + "1" + "]" * 999)) == 1
    with pytest.raises(ConfigSyntaxError) as caught:
        read_yaml("a: " + "[" * 5000)
    assert caught.value.line == 1
    with pytest.raises(ConfigSyntaxError):
        read_shell('x="' + '$("' * 3000)
    assert read_shell("echo " + "$(" * 3000) == []


def test_shell_scanner_survives_unbalanced_input():
    for text in ['python t.py --a "unclosed', "python t.py --a 'x", "args=(--a 1", "echo $(", "x=${", "cat <<EOF\n",
                 "python t.py --a `b", "(( i++ ))", "f() { python t.py --a=; }", "\\", "--a", "=", "a=(", ")"]:
        read_shell(text)


def test_shell_wrappers_before_the_launcher():
    text = src("""
        srun --exclusive -N 2 python -m verl.trainer.main_ppo a=1
        env -u X LR=1 stdbuf -oL timeout 3600 python3 train_ppo.py --b 2
        bash examples/run_grpo.sh --c 3
        """)
    assert [(e.key, e.command) for e in read_shell(text)] == [
        ("a", "verl.trainer.main_ppo"), ("b", "train_ppo.py"), ("c", "examples/run_grpo.sh")]


def test_shell_read_heredoc_argument_lists_as_openrlhf_examples_write_them():
    text = src("""
        read -r -d '' training_commands <<EOF
        openrlhf.cli.train_ppo \\
           --pretrain $HOME/ckpt \\
           --n_samples_per_prompt 1 \\
           --actor_learning_rate 5e-6
        EOF
            # --use_wandb [WANDB_TOKENS]
        if [[ ${1} != "slurm" ]]; then
            deepspeed --module $training_commands
        fi
        """)
    entries = read_shell(text)
    assert [(e.key, e.value, e.line, e.column, e.command) for e in entries] == [
        ("pretrain", "$HOME/ckpt", 3, 15, "openrlhf.cli.train_ppo"),
        ("n_samples_per_prompt", 1, 4, 27, "openrlhf.cli.train_ppo"),
        ("actor_learning_rate", 5e-06, 5, 26, "openrlhf.cli.train_ppo"),
    ]
    assert is_rl_config(entries, text)


def test_shell_eval_runs_the_command_held_in_a_variable():
    text = src("""
        RUN_CMD="torchrun --nproc_per_node 8 grpo_main.py --actor_lr 2e-6 --beta 0.04"
        if [ -n "$DRY" ]; then echo "$RUN_CMD"; fi
        eval "$RUN_CMD"
        LAUNCH='accelerate launch rloo_entry.py --clip 0.2'
        eval ${LAUNCH}
        """)
    entries = [e for e in read_shell(text) if e.source != "shell-variable"]
    assert [(e.key, e.value, e.line, e.column, e.command, e.invocation) for e in entries] == [
        ("actor_lr", 2e-06, 1, 62, "grpo_main.py", 0),
        ("beta", 0.04, 1, 74, "grpo_main.py", 0),
        ("clip", 0.2, 4, 48, "rloo_entry.py", 1),
    ]


def test_shell_eval_of_other_text_and_echo_of_the_command_give_no_flags():
    text = src("""
        CMD="python3 train_dpo_pairs.py --lr 1e-3"
        echo $CMD
        eval "$(conda shell.bash hook)"
        eval "export PATH=$PATH"
        """)
    assert [e.source for e in read_shell(text)] == ["shell-variable"]


def test_shell_quoted_array_overrides_take_the_variable_or_its_default():
    text = src("""
        KL=0.002
        OVERRIDES=(
            "algorithm.kl_ctrl.kl_coef=${KL:-0.5}"
            "actor_rollout_ref.actor.optim.lr=${ACTOR_LR:-4e-5}"
            "trainer.project_name=${PROJECT}"
        )
        python3 -m verl.trainer.main_ppo "${OVERRIDES[@]}"
        """)
    entries = [e for e in read_shell(text) if e.source == "shell-override"]
    assert [(e.key, e.value, e.text, e.line, e.column) for e in entries] == [
        ("algorithm.kl_ctrl.kl_coef", 0.002, "0.002", 1, 4),
        ("actor_rollout_ref.actor.optim.lr", 4e-05, "4e-5", 4, 51),
        ("trainer.project_name", "${PROJECT}", "${PROJECT}", 5, 27),
    ]


def test_shell_a_command_line_built_in_a_variable_and_run_by_eval_gives_its_flags_where_they_are_written():
    text = src("""
        NUM_GENERATIONS_GRPO=2
        PYTHON_EXECUTABLE="python3"
        SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
        CMD_ARGS=""
        CMD_ARGS="${CMD_ARGS} --wandb_project \\"${PROJECT}\\""
        CMD_ARGS="${CMD_ARGS} --num_generations ${NUM_GENERATIONS_GRPO}"
        if [ "$BF16" = true ]; then CMD_ARGS="${CMD_ARGS} --bf16"; fi
        FULL_CMD="${PYTHON_EXECUTABLE} ${SCRIPT_DIR}/main.py ${CMD_ARGS}"
        echo "${FULL_CMD}" > command.txt
        timeout 7200 eval "${FULL_CMD}" || {
            exit 1
        }
        """)
    entries = [e for e in read_shell(text) if e.source != "shell-variable"]
    assert [(e.key, e.value, e.line, e.column, e.command) for e in entries] == [
        ("wandb_project", "${PROJECT}", 5, 40, "${SCRIPT_DIR}/main.py"),
        ("num_generations", 2, 1, 22, "${SCRIPT_DIR}/main.py"),
        ("bf16", True, 7, 51, "${SCRIPT_DIR}/main.py"),
    ]


def test_shell_eval_reads_the_text_again_as_commands_and_splices_words_of_plain_expansions():
    text = src("""
        LR=3e-6
        LAUNCH="torchrun --nproc_per_node 8"
        ARGS="--learning_rate ${LR} --beta 0.04"
        FULL_CMD="conda activate rl && ${LAUNCH} grpo.py ${ARGS}"
        eval ${FULL_CMD}
        python3 train_rloo.py $ARGS
        ENTRY=${ENTRY:-"-m trainer.main_grpo"}
        python3 ${ENTRY} --epsilon 0.2
        """)
    entries = [e for e in read_shell(text) if e.source != "shell-variable"]
    assert [(e.key, e.value, e.line, e.column, e.command, e.invocation) for e in entries] == [
        ("learning_rate", 3e-6, 1, 4, "grpo.py", 0),
        ("beta", 0.04, 3, 36, "grpo.py", 0),
        ("learning_rate", 3e-6, 1, 4, "train_rloo.py", 1),
        ("beta", 0.04, 3, 36, "train_rloo.py", 1),
        ("epsilon", 0.2, 8, 28, "trainer.main_grpo", 2),
    ]


def test_shell_values_that_only_running_would_know_stay_as_written():
    text = src("""
        PATH="$PATH:/opt/bin"
        RUN="$(cat cmd.txt | head -1)"
        eval "$RUN"
        DIR="$(pwd)"
        eval "$DIR/train_grpo.py --num_generations 1"
        eval "${1:?usage: run.sh CMD} --lr 1e-4"
        """)
    entries = [e for e in read_shell(text) if e.source != "shell-variable"]
    assert [(e.key, e.value, e.command) for e in entries] == [
        ("num_generations", 1, "$DIR/train_grpo.py"), ("lr", 1e-4, "${1:?usage: run.sh CMD}")]
