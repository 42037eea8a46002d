"""The offline local cloud: moto as the engine, plus the glue it lacks (see DEVELOPERS.md).

from localcloud import LocalCloud, Config, outputs
with LocalCloud(Config.from_env(port=0)) as cloud: ...
outputs.load(".localcloud/outputs.json").api_url
"""

from localcloud import outputs
from localcloud.cloud import LocalCloud
from localcloud.config import Config
from localcloud.outputs import Outputs

__all__ = ["Config", "LocalCloud", "Outputs", "outputs"]
