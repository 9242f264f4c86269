"""The bundled sample app (minipic) and the demo questions, shipped as package data."""
