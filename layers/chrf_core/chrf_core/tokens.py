"""The contract's word tokens: chrF++.py's separate_punctuation, shared by both kernels' callers and the command
line (which marks unmatched words)."""

from __future__ import annotations

from .texts import normalized_text

ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")  # string.punctuation


def words(text: str, normalize: str | None = None) -> list[str]:
    """Word tokens as chrF++.py's separate_punctuation makes them.

    Split on whitespace (Python's, which is the contract's set); a one-code-point word stays whole; otherwise one
    trailing, else one leading, ASCII punctuation mark is split off. With ``normalize`` ("NFC" or "NFKC"), each
    token is then Unicode-normalized in linear time (texts.normalized_text).
    """
    tokens: list[str] = []
    for word in text.split():
        if len(word) > 1 and word[-1] in ASCII_PUNCTUATION:
            tokens += (word[:-1], word[-1])
        elif len(word) > 1 and word[0] in ASCII_PUNCTUATION:
            tokens += (word[0], word[1:])
        else:
            tokens.append(word)
    if normalize is not None:
        return [normalized_text("token", index, token, normalize) for index, token in enumerate(tokens)]
    return tokens
