// bottleneck/light.js — the build the Octokit plugins import — ships without its own types.
declare module 'bottleneck/light.js' {
  import Bottleneck from 'bottleneck';
  export default Bottleneck;
}
