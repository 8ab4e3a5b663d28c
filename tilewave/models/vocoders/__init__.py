"""Vocoders: BigVGAN (mel -> audio), the seed's causal latent decoder, and the log-mel front-end they use."""
