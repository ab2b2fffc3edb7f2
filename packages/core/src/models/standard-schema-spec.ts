// The Standard Schema v1 and Standard JSON Schema v1 interfaces, copied from `@standard-schema/spec`
// 1.x (MIT, https://standardschema.dev): the spec is designed to be copied, so core gains no
// dependency for it. Only the parts core reads are here.

/** A Standard Schema v1 (Zod 4, Valibot, ArkType …). */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': StandardSchemaV1.Props<Input, Output>
}

export declare namespace StandardSchemaV1 {
  interface Props<Input = unknown, Output = Input> {
    readonly version: 1
    readonly vendor: string
    readonly validate: (value: unknown, options?: Options) => Result<Output> | Promise<Result<Output>>
    readonly types?: Types<Input, Output> | undefined
  }
  type Result<Output> = SuccessResult<Output> | FailureResult
  interface SuccessResult<Output> {
    readonly value: Output
    readonly issues?: undefined
  }
  interface Options {
    readonly libraryOptions?: Record<string, unknown> | undefined
  }
  interface FailureResult {
    readonly issues: ReadonlyArray<Issue>
  }
  interface Issue {
    readonly message: string
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined
  }
  interface PathSegment {
    readonly key: PropertyKey
  }
  interface Types<Input = unknown, Output = Input> {
    readonly input: Input
    readonly output: Output
  }
  type InferInput<S extends StandardSchemaV1> = NonNullable<S['~standard']['types']>['input']
  type InferOutput<S extends StandardSchemaV1> = NonNullable<S['~standard']['types']>['output']
}

/** The Standard JSON Schema v1 converter a schema may offer beside `validate` (`~standard.jsonSchema`). */
export interface StandardJSONSchemaConverter {
  readonly input: (options: { readonly target: string }) => Record<string, unknown>
  readonly output: (options: { readonly target: string }) => Record<string, unknown>
}
