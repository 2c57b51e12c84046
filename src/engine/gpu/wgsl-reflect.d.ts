// wgsl_reflect's "main" is a CommonJS build inside a "type": "module" package, which Node cannot
// load; its ES build has no types of its own, so it borrows the package's.
declare module 'wgsl_reflect/wgsl_reflect.module.js' {
  export * from 'wgsl_reflect';
}
