"""jupyter_kernel_test's conformance suite against the cudalab kernel, everything applicable on.

The kernelspec comes from conftest.py's session-wide JUPYTER_PATH (an autouse fixture, set up
before unittest's setUpClass starts the kernel)."""
from __future__ import annotations

import jupyter_kernel_test as jkt


class CudalabKernelTests(jkt.KernelTests):
    kernel_name = "cudalab"
    language_name = "cudalab"
    file_extension = ".cudalab"

    code_hello_world = "%echo hello, world"
    code_stderr = "%echo --stderr oops"

    completion_samples = [
        {"text": "%ech", "matches": {"%echo"}},
        {"text": "%%ech", "matches": {"%%echo"}},
        {"text": "%echo --st", "matches": {"--stderr"}},
        {"text": "%dev", "matches": {"%device"}},
        {"text": "%zzz", "matches": set()},
    ]

    complete_code_samples = ["%echo hi", "%help", "# a comment", "%echo a\n%echo b"]
    incomplete_code_samples = ['%echo "unterminated', "%echo hi \\"]
    invalid_code_samples = ["%nosuchmagic", "hello"]

    code_generate_error = "%nosuchmagic"

    code_execute_result = [
        {"code": "%help echo", "mime": "text/plain"},
        {"code": "%help", "mime": "text/html"},
        {"code": "%echo?", "mime": "application/vnd.cudalab.result+json"},
        {"code": "%device", "mime": "application/vnd.cudalab.result+json"},
    ]

    # the first command's result is display_data, the last one's the execute_result
    code_display_data = [
        {"code": "%help echo\n%help help", "mime": "text/plain"},
        {"code": "%help echo\n%help help", "mime": "text/html"},
        {"code": "%device --brief\n%help", "mime": "application/vnd.cudalab.result+json"},
    ]

    # a glob that matches "%help echo" and no other cell this class runs ("?" is one character,
    # so "%help echo\n%help help" does not match)
    code_history_pattern = "%help ech?"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "%echo"


class CudalabIopubWelcomeTests(jkt.IopubWelcomeTests):
    kernel_name = "cudalab"
    support_iopub_welcome = True
