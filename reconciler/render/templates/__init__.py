"""The bundled drift-report templates (a package, so the wheel ships its ``*.j2`` files)."""
