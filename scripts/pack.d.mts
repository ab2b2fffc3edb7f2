// Types of scripts/pack.mjs for the TypeScript tests that use it.
export declare const root: string
export interface PublishablePackage {
  name: string
  dir: string
  version: string
  dependencies: string[]
}
export declare function publishablePackages(): PublishablePackage[]
export declare function packAll(dest: string, options?: { ignoreScripts?: boolean }): Map<string, string>
export declare function closure(name: string): string[]
