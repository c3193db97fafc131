"""A deliberately naive, independent chrF implementation, used only to check the layer.

It shares no code with the layer and takes other paths on purpose: whitespace is an explicit table of code
points from the contract (not str.split), tokens and n-grams are built with plain loops into tuples, matches are
counted from the reference side, F is computed from P and R as the contract writes it, and the score is rounded
with integer arithmetic.
"""

from fractions import Fraction

WHITESPACE = frozenset(
    [chr(c) for c in range(0x09, 0x0E)]
    + [chr(c) for c in range(0x1C, 0x20)]
    + ["\u0020", "\u0085", "\u00a0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200B)]
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)
PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def split_whitespace(text):
    words, current = [], ""
    for ch in text:
        if ch in WHITESPACE:
            if current:
                words.append(current)
            current = ""
        else:
            current += ch
    if current:
        words.append(current)
    return words


def tokens(text):
    out = []
    for word in split_whitespace(text):
        if len(word) == 1:
            out.append(word)
        elif word[len(word) - 1] in PUNCTUATION:
            out.append(word[: len(word) - 1])
            out.append(word[len(word) - 1])
        elif word[0] in PUNCTUATION:
            out.append(word[0])
            out.append(word[1:])
        else:
            out.append(word)
    return out


def grams(units, n):
    table = {}
    i = 0
    while i + n <= len(units):
        key = tuple(units[i : i + n])
        table[key] = table.get(key, 0) + 1
        i += 1
    return table


def order_counts(hyp_units, ref_units, n):
    h, r = grams(hyp_units, n), grams(ref_units, n)
    matched = 0
    for key, ref_count in r.items():
        matched += min(ref_count, h.get(key, 0))
    return sum(h.values()), sum(r.values()), matched


def naive_counts(hypotheses, references, char_order=6, word_order=0, lowercase=False, include_whitespace=False):
    totals = [[0, 0, 0] for _ in range(char_order + word_order)]
    for hyp, ref in zip(hypotheses, references):
        if lowercase:
            hyp, ref = hyp.lower(), ref.lower()
        if include_whitespace:
            hyp_chars, ref_chars = list(hyp), list(ref)
        else:
            hyp_chars = [c for c in hyp if c not in WHITESPACE]
            ref_chars = [c for c in ref if c not in WHITESPACE]
        for n in range(1, char_order + 1):
            for i, value in enumerate(order_counts(hyp_chars, ref_chars, n)):
                totals[n - 1][i] += value
        hyp_words, ref_words = tokens(hyp), tokens(ref)
        for n in range(1, word_order + 1):
            for i, value in enumerate(order_counts(hyp_words, ref_words, n)):
                totals[char_order + n - 1][i] += value
    return totals


def fmt(value):
    return f"{value.numerator}/{value.denominator}"


def round6(value):
    scaled = value * 1000000
    whole = scaled.numerator // scaled.denominator
    rest = scaled - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    return str(whole // 1000000) + "." + str(whole % 1000000).rjust(6, "0")


def naive_parts(totals, beta, averaging):
    """Per order (precision, recall, F) as the contract defines them (None where undefined), the averages, the number
    of effective orders and the score, all exact; the totals may be integers or Fractions."""
    parts, ps, rs, fs = [], [], [], []
    b2 = Fraction(beta * beta)
    for h, r, m in totals:
        p = Fraction(m) / h if h > 0 else None
        rc = Fraction(m) / r if r > 0 else None
        if p is None or rc is None:
            f = None
        elif m == 0:
            f = Fraction(0)
        else:
            f = (1 + b2) * p * rc / (b2 * p + rc)
        if h > 0 and r > 0:
            ps.append(p)
            rs.append(rc)
        fs.append(Fraction(0) if f is None else f)
        parts.append((p, rc, f))
    avg_p = sum(ps, Fraction(0)) / len(ps) if ps else Fraction(0)
    avg_r = sum(rs, Fraction(0)) / len(rs) if rs else Fraction(0)
    if averaging == "per_order_f":
        score = 100 * sum(fs, Fraction(0)) / len(fs)
    elif avg_p + avg_r == 0:
        score = Fraction(0)
    else:
        score = 100 * (1 + b2) * avg_p * avg_r / (b2 * avg_p + avg_r)
    return parts, avg_p, avg_r, len(ps), score


def naive_score(request):
    """The contract's output for an already valid request."""
    char_order = int(request.get("char_order", 6))
    word_order = int(request.get("word_order", 0))
    beta = int(request.get("beta", 2))
    lowercase = request.get("lowercase", False)
    include_whitespace = request.get("include_whitespace", False)
    averaging = request.get("averaging", "precision_recall")
    totals = request.get("totals") or naive_counts(
        request["hypotheses"], request["references"], char_order, word_order, lowercase, include_whitespace
    )
    parts, avg_p, avg_r, effective, score = naive_parts(totals, beta, averaging)
    orders = []
    for index, ((h, r, m), (p, rc, f)) in enumerate(zip(totals, parts)):
        kind, n = ("char", index + 1) if index < char_order else ("word", index - char_order + 1)
        orders.append(
            {
                "type": kind,
                "n": n,
                "hypothesis_ngrams": h,
                "reference_ngrams": r,
                "matching_ngrams": m,
                "effective": h > 0 and r > 0,
                "precision": None if p is None else fmt(p),
                "recall": None if rc is None else fmt(rc),
                "f_score": None if f is None else fmt(f),
            }
        )
    return {
        "char_order": char_order,
        "word_order": word_order,
        "beta": beta,
        "lowercase": lowercase,
        "include_whitespace": include_whitespace,
        "averaging": averaging,
        "segment_count": len(request["hypotheses"]),
        "orders": orders,
        "effective_order_count": effective,
        "average_precision": fmt(avg_p),
        "average_recall": fmt(avg_r),
        "score": round6(score),
        "score_fraction": fmt(score),
    }


def units_of(text, char_order, word_order, lowercase, include_whitespace):
    """A text's n-gram tables of every order, characters first."""
    if lowercase:
        text = text.lower()
    chars = list(text) if include_whitespace else [c for c in text if c not in WHITESPACE]
    words = tokens(text)
    return [grams(chars, n) for n in range(1, char_order + 1)] + [grams(words, n) for n in range(1, word_order + 1)]


def naive_aggregate(hypotheses, references, weights=None, **chosen):
    """Each hypothesis' exact score against the references' average n-gram counts, as the definition reads: average
    counts S_g as Fractions (each reference's counts times its share of the weights, 1/R each without weights),
    matches = sum of min(h_g, S_g), precision = matches / the hypothesis' n-grams, recall = matches / the average
    references' n-grams."""
    char_order, word_order = int(chosen.get("char_order", 6)), int(chosen.get("word_order", 0))
    options = (char_order, word_order, chosen.get("lowercase", False), chosen.get("include_whitespace", False))
    if weights is None:
        shares = [Fraction(1, len(references))] * len(references)
    else:
        total = sum(Fraction(weight) for weight in weights)
        shares = [Fraction(weight) / total for weight in weights]
    tables = [units_of(reference, *options) for reference in references]
    average = []
    for order in range(char_order + word_order):
        summed = {}
        for share, table in zip(shares, tables):
            for key, value in table[order].items():
                summed[key] = summed.get(key, Fraction(0)) + share * value
        average.append(summed)
    scores = []
    for hypothesis in hypotheses:
        totals = []
        for order, table in enumerate(units_of(hypothesis, *options)):
            matched = sum((min(Fraction(count), average[order].get(key, Fraction(0))) for key, count in table.items()),
                          Fraction(0))
            totals.append([Fraction(sum(table.values())), sum(average[order].values(), Fraction(0)), matched])
        scores.append(naive_parts(totals, int(chosen.get("beta", 2)), chosen.get("averaging", "precision_recall"))[-1])
    return scores
