/**
 * `node --import tsx scripts/unused-exports.ts`: lists what src/ exports that no other file imports
 * (src/, test/, scripts/ and bench/ count as users), so dead code and needless barrel exports show
 * up: exports nobody uses, re-exports nobody imports through that barrel, and values (not types: a
 * type in an exported signature stays exported) used only in their own file, whose `export` can go.
 * Exits 1 when anything is listed. Entry points (src/main.ts, src/cli/main.ts, and src/sdk/index.ts:
 * the contracts package's public SDK API, for client programs) and migrations (loaded by name at
 * run time) are skipped.
 */
import ts from 'typescript';

const ROOT = new URL('../', import.meta.url).pathname;
const SKIPPED = [/^src\/main\.ts$/, /^src\/cli\/main\.ts$/, /^src\/sdk\/index\.ts$/, /^src\/store\/migrations\//];

const configFile = ts.readConfigFile(`${ROOT}tsconfig.json`, (path) => ts.sys.readFile(path));
const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, ROOT);
const program = ts.createProgram(parsed.fileNames, parsed.options);
const checker = program.getTypeChecker();
const sources = program
  .getSourceFiles()
  .filter((file) => !file.isDeclarationFile && file.fileName.startsWith(ROOT) && !file.fileName.includes('/node_modules/'));

/** The declarations a symbol stands for, through import and re-export aliases. */
function target(symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

/** Symbols that some file other than their own reaches, by import, re-export or namespace access. */
const usedElsewhere = new Set<ts.Symbol>();
/** `<module file>#<name>`: names imported from that very module (a barrel's re-exports are judged by it). */
const importedFrom = new Set<string>();

function noteImport(module: ts.Symbol | undefined, name: string): void {
  const file = module?.valueDeclaration?.getSourceFile().fileName;
  if (file) importedFrom.add(`${file}#${name}`);
}
/** Modules imported whole (`import * as`, dynamic `import()`): every export of them counts as used. */
const wholeModules = new Set<ts.Symbol>();

function moduleOf(specifier: ts.Expression): ts.Symbol | undefined {
  return checker.getSymbolAtLocation(specifier);
}

for (const file of sources) {
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      const module = node.moduleSpecifier ? moduleOf(node.moduleSpecifier) : undefined;
      if (ts.isImportDeclaration(node)) {
        const bindings = node.importClause?.namedBindings;
        if (bindings && ts.isNamespaceImport(bindings) && module) wholeModules.add(module);
        if (node.importClause?.name && module) {
          const def = checker.getExportsOfModule(module).find((symbol) => symbol.escapedName === 'default');
          if (def) usedElsewhere.add(target(def));
        }
        if (bindings && ts.isNamedImports(bindings)) {
          for (const element of bindings.elements) {
            const symbol = checker.getSymbolAtLocation(element.name);
            if (symbol) usedElsewhere.add(target(symbol));
            noteImport(module, (element.propertyName ?? element.name).text);
          }
        }
      } else if (module && !node.exportClause) {
        wholeModules.add(module); // export * from
      } else if (node.exportClause && ts.isNamedExports(node.exportClause)) {
        for (const element of node.exportClause.elements) {
          const symbol = checker.getSymbolAtLocation(element.propertyName ?? element.name);
          if (symbol && node.moduleSpecifier) usedElsewhere.add(target(symbol));
          if (node.moduleSpecifier) noteImport(module, (element.propertyName ?? element.name).text);
        }
      }
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0]) {
      const module = moduleOf(node.arguments[0]);
      if (module) wholeModules.add(module);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}

/** Whether a symbol is referenced in its own file outside its declaration. */
function usedLocally(file: ts.SourceFile, symbol: ts.Symbol): boolean {
  let used = false;
  const visit = (node: ts.Node): void => {
    if (used) return;
    if (ts.isIdentifier(node) && node.text === symbol.name) {
      const found = checker.getSymbolAtLocation(node);
      const declaration = symbol.declarations?.some((declaration) => (declaration as ts.NamedDeclaration).name === node);
      if (found && target(found) === symbol && !declaration) used = true;
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return used;
}

const findings: string[] = [];
for (const file of sources) {
  const relative = file.fileName.slice(ROOT.length);
  if (!relative.startsWith('src/') || SKIPPED.some((pattern) => pattern.test(relative))) continue;
  const module = checker.getSymbolAtLocation(file);
  if (!module || wholeModules.has(module)) continue;
  for (const exported of checker.getExportsOfModule(module)) {
    const symbol = target(exported);
    // Re-exports are judged where they are declared.
    if (exported !== symbol && symbol.declarations?.every((declaration) => declaration.getSourceFile() !== file)) {
      if (!importedFrom.has(`${file.fileName}#${exported.name}`)) findings.push(`${relative}: ${exported.name} (re-export nobody imports from here)`);
      continue;
    }
    if (usedElsewhere.has(symbol)) continue;
    const line = symbol.declarations?.[0] ? file.getLineAndCharacterOfPosition(symbol.declarations[0].getStart()).line + 1 : 0;
    if (!usedLocally(file, symbol)) findings.push(`${relative}:${line}: ${exported.name} (not used anywhere)`);
    else if (symbol.flags & ts.SymbolFlags.Value) findings.push(`${relative}:${line}: ${exported.name} (only used in its own file: drop the export)`);
  }
}

for (const finding of findings.sort()) console.log(finding);
console.log(`${findings.length} unused export(s)`);
process.exit(findings.length > 0 ? 1 : 0);
