"""Fixes for schema quirks of Debian's jupyter_kernel_test 0.4.5.

The kernel follows the messaging spec; 0.4.5's schemas disagree with it in two
places, so the test side is patched rather than the kernel:

* ``input_request.password`` is typed as a number; the spec says boolean.
* replies may only have status ``ok``/``error``/``abort``; the spec (and
  ipykernel) say ``aborted`` for a request dropped after an earlier error, and
  such a reply carries no other content.

Importing this module applies the patch once; ``validate_message`` is the
patched validator, usable by other tests too.
"""

import jupyter_kernel_test
from jupyter_kernel_test import msgspec_v5

_original = msgspec_v5.validate_message


def validate_message(msg, msg_type=None, parent_id=None):
    """msgspec_v5.validate_message, plus status "aborted" on replies."""
    content = msg.get("content")
    if isinstance(content, dict) and content.get("status") == "aborted":
        msgspec_v5.msg_structure_validator.validate(msg)
        if msg_type is not None and msg["header"]["msg_type"] != msg_type:
            raise msgspec_v5.ValidationError(
                f"Message type {msg['header']['msg_type']!r} != {msg_type!r}"
            )
        if parent_id and msg["parent_header"].get("msg_id") != parent_id:
            raise msgspec_v5.ValidationError("Parent header does not match expected")
        return
    _original(msg, msg_type, parent_id)


msgspec_v5.schema_fragments["input_request"]["properties"]["password"] = {"type": "boolean"}
msgspec_v5.validate_message = validate_message
# KernelTests calls the name it imported into its own module.
jupyter_kernel_test.validate_message = validate_message
