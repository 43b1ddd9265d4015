"""The compiler's commands (``xce-compile``, ``xce-policy``, ``xce-init``): one thin module each."""
