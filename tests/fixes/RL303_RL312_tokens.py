"""RL303 and RL312: keywords set or added, in the call's own layout."""

MODEL = "meta-llama/Llama-3.2-1B-Instruct"  # its tokenizer adds a BOS


def decode_completions(tokenizer, completion_ids, reward_fn):
    completions = tokenizer.batch_decode(completion_ids)
    texts = tokenizer.batch_decode(
        completion_ids,
        skip_special_tokens=False,
    )
    return reward_fn(completions), reward_fn(texts)


def encode_prompt(tokenizer, messages):
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tokenizer(rendered, return_tensors="pt")
