"""Near-limit request payloads of three kinds of data, and the most expensive valid requests we can build.

Shared by the benchmark (make bench, bench/) and the tests that pin the worst case. Everything is deterministic.

* real: machine translation output against its reference (the chrF++ tool's examples: en, cs, ru, zh);
* high overlap: each reference with a quarter of its words replaced and some dropped (MBR decoding, close
  systems);
* low overlap: each hypothesis against another segment's reference.
"""

from __future__ import annotations

import pathlib
import random

DATA = pathlib.Path(__file__).resolve().parent / "data" / "popovic"
LANGUAGES = ("en", "cs", "ru", "zh")
LIMIT = 65536
SEGMENTS = 256
KINDS = ("real", "high overlap", "low overlap")


def real_pairs() -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for language in LANGUAGES:
        hypotheses = (DATA / f"example.hyp.{language}").read_text(encoding="utf-8").splitlines()
        references = (DATA / f"example.ref.{language}").read_text(encoding="utf-8").splitlines()
        pairs += zip(hypotheses, references)
    return pairs


def trim(text: str, limit: int) -> str:
    """The longest prefix of ``text`` within ``limit`` UTF-8 bytes."""
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


def edited(reference: str, rng: random.Random, vocabulary: list[str]) -> str:
    """The reference with about a quarter of its words replaced and one in ten dropped."""
    out = []
    for word in reference.split():
        roll = rng.random()
        if roll < 0.1:
            continue
        out.append(rng.choice(vocabulary) if roll < 0.35 else word)
    return " ".join(out)


def near_limit(kind: str, segments: int = SEGMENTS, limit: int = LIMIT) -> tuple[list[str], list[str]]:
    """``segments`` pairs of the given kind whose texts together take just under ``limit`` UTF-8 bytes."""
    pairs = real_pairs()
    chosen = [pairs[(i * 7) % len(pairs)] for i in range(segments)]
    side = limit // (2 * segments)
    references = [trim(reference, side) for _, reference in chosen]
    if kind == "real":
        hypotheses = [trim(hypothesis, side) for hypothesis, _ in chosen]
    elif kind == "high overlap":
        rng = random.Random(2026)
        vocabulary = sorted({word for pair in pairs for text in pair for word in text.split()})
        hypotheses = [trim(edited(reference, rng, vocabulary), side) for reference in references]
    elif kind == "low overlap":
        hypotheses = [trim(chosen[(i + 1) % segments][0], side) for i in range(segments)]
    else:
        raise ValueError(kind)
    return hypotheses, references


def against_itself(text: str, at: int, letter: str, word_order: int = 0) -> dict:
    """A request scoring ``text`` against itself with the letter at ``at`` replaced, at char_order 10."""
    return {"hypotheses": [text], "references": [text[:at] + letter + text[at + 1 :]], "char_order": 10,
            "word_order": word_order}


def letters_text(choose: random.Random, letters: str, length: int) -> str:
    """A random text of ``length`` letters drawn from ``letters``."""
    return "".join(choose.choice(letters) for _ in range(length))


def adversarial() -> dict[str, dict]:
    """Valid requests built to be as slow as possible for a counting kernel (each at most 65536 bytes).

    Long runs of one character (every n-gram repeats, clipping everywhere), near-identical long texts (every
    position survives every order; changed at both ends so that no shared prefix or suffix helps), repeated
    random texts (no n-gram is ever unique), small alphabets (classes of equal n-grams that stay large),
    scattered changes (unique pairs that part at every distance; with a larger alphabet they are unique from a
    lower order on, so they part over more orders; every 11th, so that the stretches between changes are too
    short to count by length; on a repeated text, classes of two that part on one side only, or on both, and with
    40 letters and every 17th or 23rd, classes of two that stay shared over most orders), one-character words
    repeated (word n-grams that all repeat), and many distinct astral code points (large tables). Characters-only
    variants are compared with a typical request at their own settings, which is cheaper than one with words.
    """
    half = LIMIT // 2
    words = " ".join("abcdefghijklmnopqrstuvwxyz"[i % 26] for i in range(half // 4))
    run = "a b " * (half // 4)
    astral = "".join(chr(0x10000 + (i * 7919) % 0xF0000) for i in range(half // 4))
    shuffled = list(astral)
    random.Random(5).shuffle(shuffled)
    letters = random.Random(11)
    near = "".join(letters.choice("abcdefghij") for _ in range(half))
    twice = near[: half // 2] * 2  # every n-gram at least twice on each side: no n-gram is ever unique
    thrice = near[: half // 3] * 3
    binary = "".join(letters.choice("ab") for _ in range(half))  # n-gram classes that stay large to order 10
    ternary = "".join(letters.choice("abc") for _ in range(half))
    run_then_random = "a" * (half // 2) + near[: half // 2]
    every_eleventh = "".join("!" if i % 11 == 0 else letter for i, letter in enumerate(near))
    twice_every_eleventh = "".join("!" if i % 11 == 0 else letter for i, letter in enumerate(twice))
    twice_every_eleventh_after_5 = "".join("!" if i % 11 == 5 else letter for i, letter in enumerate(twice))
    # Changed to another of the ten letters (no code point that only one side has), every 13th at other places on
    # each side: classes of two on each side that part at different orders on each side.
    other_letter = {letter: "abcdefghij"[("abcdefghij".index(letter) + 3) % 10] for letter in "abcdefghij"}
    twice_thirteenth_h = "".join(other_letter[letter] if i % 13 == 5 else letter for i, letter in enumerate(twice))
    twice_thirteenth_r = "".join(other_letter[letter] if i % 13 == 0 else letter for i, letter in enumerate(twice))
    forty = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
    wide = "".join(letters.choice(forty) for _ in range(half))  # 40 letters
    wide_eleventh = "".join("!" if i % 11 == 0 else letter for i, letter in enumerate(wide))
    # The same with 40 letters, every 17th or 23rd: classes of two on each side that stay shared up to order 8 or 10.
    other_wide = {letter: forty[(forty.index(letter) + 3) % 40] for letter in forty}
    wide_twice = wide[: half // 2] * 2
    wide_seventeenth_h = "".join(other_wide[c] if i % 17 == 8 else c for i, c in enumerate(wide_twice))
    wide_seventeenth_r = "".join(other_wide[c] if i % 17 == 0 else c for i, c in enumerate(wide_twice))
    wide_twenty_third_h = "".join(other_wide[c] if i % 23 == 11 else c for i, c in enumerate(wide_twice))
    wide_twenty_third_r = "".join(other_wide[c] if i % 23 == 0 else c for i, c in enumerate(wide_twice))
    # Short segments that repeat themselves (as a hypothesis caught in a loop does), nearly identical to their
    # references: every matched n-gram repeats on both sides, and a short reference is searched for each. And a long
    # hypothesis that repeats its short reference over and over.
    loops = random.Random(13)
    loop = [letters_text(loops, forty, LIMIT // (4 * SEGMENTS)) * 2 for _ in range(SEGMENTS)]
    looping = letters_text(loops, forty, 200)
    return {
        "one character against filler + run (c10)": {
            "hypotheses": ["a" * half], "references": ["!" * (half - 10) + "a" * 10], "char_order": 10,
        },
        "one-character words repeated twice against filler + them (c6 w4)": {
            "hypotheses": [words + " " + words], "references": ["!" * (half // 2) + " " + words],
            "char_order": 6, "word_order": 4,
        },
        "near-identical long texts (c10 w4)": {
            "hypotheses": [near], "references": [near[: half - 1] + "!"], "char_order": 10, "word_order": 4,
        },
        "a random text twice against itself, one letter changed (c10 w4)": against_itself(twice, half // 4, "!", 4),
        "a random text twice against itself, characters only (c10)": against_itself(twice, half // 4, "!"),
        "near-identical long texts, characters only (c10)": {
            "hypotheses": [near], "references": ["!" + near[1 : half - 1] + "!"], "char_order": 10, "word_order": 0,
        },
        "a random text against itself with every 11th letter changed (c10)": {
            "hypotheses": [near], "references": [every_eleventh], "char_order": 10, "word_order": 0,
        },
        "a random text twice against the same with every 11th letter changed (c10)": {
            "hypotheses": [twice], "references": [twice_every_eleventh], "char_order": 10, "word_order": 0,
        },
        "the same, changed at other places on the hypothesis side too (c10)": {
            "hypotheses": [twice_every_eleventh_after_5], "references": [twice_every_eleventh], "char_order": 10,
            "word_order": 0,
        },
        "a random text twice against the same, every 13th letter changed to another letter, at other places on "
        "each side (c10)": {
            "hypotheses": [twice_thirteenth_h], "references": [twice_thirteenth_r], "char_order": 10, "word_order": 0,
        },
        "a 40-letter random text against itself with every 11th letter changed (c10)": {
            "hypotheses": [wide], "references": [wide_eleventh], "char_order": 10, "word_order": 0,
        },
        "a 40-letter random text twice against the same, every 17th letter changed to another letter, at other "
        "places on each side (c10)": {
            "hypotheses": [wide_seventeenth_h], "references": [wide_seventeenth_r], "char_order": 10, "word_order": 0,
        },
        "the same, every 23rd letter (c10)": {
            "hypotheses": [wide_twenty_third_h], "references": [wide_twenty_third_r], "char_order": 10,
            "word_order": 0,
        },
        "a random text three times against itself, one letter changed (c10)": against_itself(thrice, half // 6, "!"),
        "random two-letter text against itself, one letter changed (c10)": against_itself(binary, half // 2, "c"),
        "random three-letter text against itself, one letter changed (c10)": against_itself(ternary, half // 2, "d"),
        "a run of one letter, then random text, against itself, one changed (c10)": against_itself(
            run_then_random, half // 4, "b"),
        "a b a b ... both sides (c10 w4)": {
            "hypotheses": [run], "references": [run[:-2] + "c "], "char_order": 10, "word_order": 4,
        },
        "distinct astral code points, shuffled (c10)": {
            "hypotheses": [astral], "references": ["".join(shuffled)], "char_order": 10,
        },
        "256 short segments, each a text twice, one letter changed on each side (c10)": {
            "hypotheses": [text[:1] + "!" + text[2:] for text in loop],
            "references": [text[:2] + "?" + text[3:] for text in loop], "char_order": 10, "word_order": 0,
        },
        "a long hypothesis that repeats its 200-letter reference (c10)": {
            "hypotheses": [(looping * (LIMIT // 200))[: LIMIT - 200]], "references": [looping], "char_order": 10,
            "word_order": 0,
        },
        "256 near-identical segments (c10 w4)": {
            "hypotheses": [near[i * 127 : i * 127 + 127] for i in range(SEGMENTS)],
            "references": [near[i * 127 : i * 127 + 126] + "!" for i in range(SEGMENTS)],
            "char_order": 10, "word_order": 4,
        },
    }
