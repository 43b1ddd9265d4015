"""What every command shares: the runner, ``--format``, problem rendering and the common options."""
