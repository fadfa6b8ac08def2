#!/usr/bin/env python3
"""Renders real upstream chat templates with jinja2 the way transformers does, for the C++ test
ChatTemplateTest.UpstreamTemplatesMatchJinja2.

The templates are llama.cpp's models/templates/*.jinja (the chat templates of Llama 3.x,
Qwen2.5/3, Hermes 2/3, Mistral, DeepSeek, Command R, Gemma, gpt-oss, ...), which
tools/fetch_vocab_tests.py extracts from the llama-cpp-python sdist. The repository does not
carry their text, so the expected outputs are rendered here at setup: every template with every
message set of tests/data/chat/messages (system messages, multi-turn, tool definitions,
assistant tool_calls, tool results with tool_call_id, ...), add_generation_prompt false and
true, written as one fixture per template to OUT_DIR/<template>.json in the format of
tests/data/chat/expected (the output, or the error jinja2 raised).

The environment is transformers' (chat_template_utils._compile_jinja_template and
render_jinja_template in transformers 5.x): ImmutableSandboxedEnvironment(trim_blocks=True,
lstrip_blocks=True) with loopcontrols and the {% generation %} tag, its tojson filter,
raise_exception, strftime_now, dict and namespace; messages whose keys are None lose those keys
and reasoning fields are aliased, as apply_chat_template does. strftime_now reads a fixed clock
(NOW below; each case records it) so a fixture rendered at setup still matches on a later day.
Only jinja2 is needed (tools/requirements-server.txt pins it). With --check-transformers, every
case is also rendered through transformers' own render_jinja_template (its clock set to NOW)
and must be identical; that is how this environment was checked against transformers 5.25.0.

    .venv/bin/python tools/render_chat_references.py TEMPLATE_DIR OUT_DIR [--check-transformers]
"""

import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox
import jinja2.utils

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MESSAGES_DIR = os.path.join(ROOT, "tests", "data", "chat", "messages")

# strftime_now's clock: a fixed local time (the C++ test passes the same fields).
NOW = datetime.datetime(2025, 3, 5, 14, 7, 9)

# Special tokens as each family's tokenizer passes them (by the start of the file name);
# others get <s> and </s>. They only need to be the same on both sides of the comparison.
TOKENS = [
    ("meta-llama-", "<|begin_of_text|>", "<|eot_id|>"),
    ("fireworks-ai-llama-3", "<|begin_of_text|>", "<|eot_id|>"),
    ("NousResearch-Hermes", "<|begin_of_text|>", "<|im_end|>"),
    ("Qwen", "", "<|im_end|>"),
    ("deepseek-ai-", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("llama-cpp-deepseek-r1", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("CohereForAI-", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    ("Cohere2", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    ("google-gemma-", "<bos>", "<eos>"),
    ("microsoft-Phi-3", "<s>", "<|endoftext|>"),
    ("HuggingFaceTB-SmolLM3", "", "<|im_end|>"),
    ("openai-gpt-oss", "<|startoftext|>", "<|return|>"),
]


def special_tokens(name):
    for prefix, bos, eos in TOKENS:
        if name.startswith(prefix):
            return bos, eos
    return "<s>", "</s>"


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %} tag; it only tracks indices, so it renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [],
                                      body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def compile_template(source):
    """transformers' _compile_jinja_template, with strftime_now on the fixed clock."""

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return NOW.strftime(format)

    class TemplateDict:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    "Chat templates cannot store underscore-prefixed attributes on a namespace, "
                    f"but got {name!r}. Please rename the attribute.")

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env.from_string(source)


REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def normalize(messages):
    """apply_chat_template's None-key drop, then render_jinja_template's reasoning aliases."""
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if v is not None}
        reasoning = next((m[k] for k in REASONING_FIELDS if m.get(k) is not None), None)
        if reasoning is not None:
            m = {"thinking": reasoning, **m, "reasoning_content": reasoning}
        out.append(m)
    return out


def render(compiled, messages, tools, add_generation_prompt, bos, eos, extra):
    return compiled.render(
        messages=normalize(messages), tools=tools, documents=None,
        add_generation_prompt=add_generation_prompt, bos_token=bos, eos_token=eos, **extra)


def render_with_transformers(source, messages, tools, add_generation_prompt, bos, eos, extra):
    from transformers.utils import chat_template_utils as ctu

    class FixedClock(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return NOW

    ctu.datetime = FixedClock  # its strftime_now calls datetime.now() at render time
    conversation = [{k: v for k, v in m.items() if v is not None} for m in messages]
    rendered, _ = ctu.render_jinja_template(
        conversations=[conversation], tools=tools, chat_template=source,
        add_generation_prompt=add_generation_prompt, bos_token=bos, eos_token=eos, **extra)
    return rendered[0]


def outcome(fn):
    try:
        return {"output": fn()}
    except Exception as e:  # the fixture records what jinja2 raised
        return {"error": str(e), "error_type": type(e).__name__}


def load_message_sets():
    sets = {}
    for name in sorted(os.listdir(MESSAGES_DIR)):
        if name.endswith(".json"):
            with open(os.path.join(MESSAGES_DIR, name), encoding="utf-8") as f:
                sets[name[:-5]] = json.load(f)
    return sets


def render_template_cases(name, source, message_sets, check_transformers):
    bos, eos = special_tokens(name)
    compiled = compile_template(source)
    cases = []
    for mname, mset in message_sets.items():
        extra = dict(mset.get("extra", {}))
        tools = mset.get("tools")
        for agp in (False, True):
            case = {
                "messages_file": mname,
                "messages": mset["messages"],
                "add_generation_prompt": agp,
                "bos_token": bos,
                "eos_token": eos,
                "extra": dict(extra, **({"tools": tools} if tools is not None else {})),
                "now": NOW.strftime("%Y-%m-%dT%H:%M:%S"),
            }
            got = outcome(lambda: render(compiled, mset["messages"], tools, agp, bos, eos, extra))
            if check_transformers:
                want = outcome(lambda: render_with_transformers(
                    source, mset["messages"], tools, agp, bos, eos, extra))
                # Errors agree on their type (and raise_exception's message); a RecursionError's
                # text depends on where Python's stack ran out.
                if want != got and not ("error" in want and "error" in got and
                                        want["error_type"] == got["error_type"] and
                                        want["error_type"] != "TemplateError"):
                    sys.exit(f"{name} with {mname} (add_generation_prompt={agp}): this "
                             f"environment gives {got!r:.300}, transformers {want!r:.300}")
            case.update(got)
            cases.append(case)
    return cases


def main(argv):
    check = "--check-transformers" in argv
    args = [a for a in argv if a != "--check-transformers"]
    if len(args) != 2:
        sys.exit(__doc__)
    template_dir, out_dir = args
    names = sorted(n for n in os.listdir(template_dir) if n.endswith(".jinja"))
    if not names:
        sys.exit(f"no .jinja files in {template_dir}")
    os.makedirs(out_dir, exist_ok=True)
    for stale in os.listdir(out_dir):
        if stale.endswith(".json") and stale[:-5] + ".jinja" not in names:
            os.remove(os.path.join(out_dir, stale))
    message_sets = load_message_sets()
    num_cases = num_errors = 0
    for name in names:
        with open(os.path.join(template_dir, name), encoding="utf-8") as f:
            source = f.read()
        cases = render_template_cases(name, source, message_sets, check)
        num_cases += len(cases)
        num_errors += sum("error" in c for c in cases)
        fixture = {"template": name, "jinja2": jinja2.__version__, "cases": cases}
        target = os.path.join(out_dir, name[:-6] + ".json")
        with open(target + ".tmp", "w", encoding="utf-8") as f:
            json.dump(fixture, f, ensure_ascii=False, indent=1)
            f.write("\n")
        os.replace(target + ".tmp", target)
    print(f"{len(names)} templates, {num_cases} cases ({num_errors} raise) in {out_dir}"
          + (" (identical to transformers)" if check else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
