"""The expected speed-up of a draft/target pair: hardware, quantization, cost per step, acceptance, estimate."""
