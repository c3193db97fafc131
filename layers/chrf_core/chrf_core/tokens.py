"""The contract's word tokens: chrF++.py's separate_punctuation, shared by both kernels' callers and the command
line (which marks unmatched words)."""

from __future__ import annotations

from .preparation import prepared_text

ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")  # string.punctuation


def words(text: str, normalize: str | None = None, lowercase: bool = False) -> list[str]:
    """Word tokens as chrF++.py's separate_punctuation makes them.

    Split on whitespace (Python's, which is the contract's set); a one-code-point word stays whole; otherwise one
    trailing, else one leading, ASCII punctuation mark is split off. With ``normalize`` ("NFC" or "NFKC") or
    ``lowercase``, each token is then prepared as the kernels count it (preparation.prepared_text: normalized in linear
    time, then lowercased).
    """
    tokens: list[str] = []
    for word in text.split():
        if len(word) > 1 and word[-1] in ASCII_PUNCTUATION:
            tokens += (word[:-1], word[-1])
        elif len(word) > 1 and word[0] in ASCII_PUNCTUATION:
            tokens += (word[0], word[1:])
        else:
            tokens.append(word)
    if normalize is not None or lowercase:
        return [prepared_text("token", index, token, normalize, lowercase) for index, token in enumerate(tokens)]
    return tokens
