"""RL302: re.DOTALL added to the flags, in each place flags can be written."""
import re

FORMAT = re.compile(r"^<think>.+?</think>\n<answer>.+?</answer>$")
LOOSE = re.compile(
    r"<think>.*?</think>",
    re.IGNORECASE,   # keep this comment
)


def strip_thinking(text):
    return re.sub(r"<thinking>.*</thinking>", "", text, flags=re.MULTILINE)


def closed(response):
    return re.fullmatch(r"<think>.*?</think>.*", response) is not None
