"""Private GAN methods; each says where its privacy barrier sits and which DP event a step is."""

from dpsynth.methods.dpcgan import DPCGAN, DPCGANConfig
from dpsynth.methods.dpwgan import DPWGAN, DPWGANConfig
from dpsynth.methods.gswgan import GSWGAN, GSWGANConfig

# name -> (method class, its configuration dataclass)
METHODS = {
    "dpcgan": (DPCGAN, DPCGANConfig),
    "dpwgan": (DPWGAN, DPWGANConfig),
    "gswgan": (GSWGAN, GSWGANConfig),
}

__all__ = [
    "DPCGAN",
    "DPCGANConfig",
    "DPWGAN",
    "DPWGANConfig",
    "GSWGAN",
    "GSWGANConfig",
    "METHODS",
]
