// Output shard sizes, apart from driver.ts so that the page can name them without loading the driver
// (and the YAML library its model card brings) into its main chunk.
export const DEFAULT_SHARD_BYTES = 5_000_000_000;
/** The studio's shard size: under the ~2 GiB a browser can hold as one downloadable file. */
export const BROWSER_SHARD_BYTES = 2_000_000_000;
