"""Private GAN methods; each says where its privacy barrier sits and which DP event a step is."""

from dpforge.methods.dpcgan import DPCGAN, DPCGANConfig
from dpforge.methods.dpwgan import DPWGAN, DPWGANConfig
from dpforge.methods.gswgan import GSWGAN, GSWGANConfig

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
